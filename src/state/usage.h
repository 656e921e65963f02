// What the store keeps for accounting (cohort usage): how long each task held its resources,
// and the moments of a job that are counted (submitted, an attempt started, ended).
//
// A task's hold is written by the master with the job's record, in the same transaction: once
// when the task gets its resources (open, no end) and once when they are given back (its end).
// The moments are read from the jobs themselves (their submission, their attempts' starts and
// their end), which the store indexes as it saves each job.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/time.h"
#include "model/job.h"

namespace cohort::state {

// One task's hold on its resources: from when the master took them for it (placement or
// growth) to when it gave them back (the task's end). Keyed by job, attempt, task and start, so
// that writing the same hold again (its end, or once more after a restart) changes one row.
struct TaskUsage {
  JobId job_id = 0;
  int attempt = 0;
  std::string task;  // "worker/0"
  std::string team;
  std::string user;
  int64_t gpus = 0;
  int64_t milli_cpus = 0;
  Timestamp start;
  std::optional<Timestamp> end;  // none while the task holds them
};

// A moment in a job's life that accounting counts.
struct JobMilestone {
  enum class Kind { kSubmitted, kAttemptStarted, kFinished };
  Kind kind = Kind::kSubmitted;
  JobId job_id = 0;
  std::string team;
  std::string user;
  Timestamp at;
  int attempt = 0;                            // kAttemptStarted
  JobState final_state = JobState::kPending;  // kFinished: SUCCEEDED, FAILED or KILLED
  Timestamp submitted_at;  // kAttemptStarted: the first attempt's wait is at - this
};

// Which holds and moments a scan returns: holds that overlap [since, until), moments within it;
// an empty team or user matches any.
struct UsageScan {
  Timestamp since;
  Timestamp until;
  std::string team;
  std::string user;
};

}  // namespace cohort::state
