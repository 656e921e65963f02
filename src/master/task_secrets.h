// Environment secrets in jobs (docs/security.md, "Environment secrets"): every reference is
// checked at submission, and the values are put into each task's environment only when its
// launch is built for its node's agent. No value reaches a message, an event or the log.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "common/status.h"
#include "master/job_book.h"
#include "master/secrets.h"
#include "model/job.h"

namespace cohort::master {

class TaskSecrets {
 public:
  TaskSecrets(const Secrets& secrets, JobBook& jobs) : secrets_(secrets), jobs_(jobs) {}

  // At submission: every secret the spec names exists for `user` or the spec's team, and the
  // environment fits with their values, and so does the job's tasks' text (model/job_size.h);
  // kInvalidArgument naming each variable or group otherwise.
  Status CheckReferences(const JobSpec& spec, const std::string& user) const;
  // What the values of the secrets that `group` names add to each of its tasks, as they are now
  // (those that do not exist add nothing).
  int64_t ValueBytes(const JobSpec& spec, const std::string& user,
                     const TaskGroupSpec& group) const;
  // Puts the values of the secrets that the task's group names into `env`. One that is gone, or
  // has grown past the environment's bound, is left out, and the job gets an event saying so,
  // once per attempt and variable.
  void Inject(const Job& job, const std::string& role, std::map<std::string, std::string>& env);

 private:
  const Secrets& secrets_;
  JobBook& jobs_;
  // Per active job: the attempt, and the variables it was told were left out in it.
  std::map<JobId, std::pair<int, std::set<std::string>>> left_out_;
};

}  // namespace cohort::master
