// The jobs the master knows, in memory, and how each change of one is written: the job with its
// attempts, which jobs wait (PENDING) and which hold resources (STARTING, RUNNING, STOPPING),
// submissions by request id, the holds and ends noted since the job's last write, and the
// runtime history that ended jobs teach (docs/scheduler.md, "The rank of a job"). Bookkeeping
// only: what a change means (the lifecycle, scheduling, agents' reports) is decided elsewhere.
// The home of what later issues add per job or over jobs (a sweep's trials, a job's artifacts).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "master/journal.h"
#include "model/job.h"
#include "scheduler/estimate_cache.h"
#include "scheduler/runtime_history.h"
#include "state/state_store.h"

namespace cohort::master {

struct JobFilter {
  std::optional<JobState> state;
};

class JobBook {
 public:
  // `history_max_keys`: the most keys the runtime history keeps (rows in the store included).
  JobBook(Journal& journal, const Clock& clock, size_t history_max_keys);

  // Reads every job and the runtime history from the store; returns the highest desired-state
  // version any task was assigned (a restarted master hands out versions above it).
  StatusOr<uint64_t> Load();

  Job* Find(JobId id);
  const Job* Find(JobId id) const;
  // kNotFound for an unknown id.
  StatusOr<const Job*> Get(JobId id) const;
  // A job that must be there (one of pending() or active(), or one a placement names).
  Job& At(JobId id) { return jobs_.at(id); }
  const Job& At(JobId id) const { return jobs_.at(id); }
  // Every job that `filter` selects, in id order.
  std::vector<const Job*> List(const JobFilter& filter) const;
  size_t size() const { return jobs_.size(); }
  const std::set<JobId>& pending() const { return pending_; }
  const std::set<JobId>& active() const { return active_; }
  bool IsActive(JobId id) const { return active_.count(id) > 0; }
  // Jobs of `team` that have not ended.
  int LiveJobsOf(const std::string& team) const;
  // PENDING jobs of a user and of a team (what the queue caps count, JobLifecycle::Submit).
  int PendingOfUser(const std::string& user) const;
  int PendingOfTeam(const std::string& team) const;
  // What the agent of `node` may ship logs and metrics for: kNotFound unless `task` names one of
  // the job's tasks in one of its attempts; kPermissionDenied if that task was placed on another
  // node (or on none).
  Status CheckTask(const TaskId& task, const std::string& node) const;
  // The job a submission with this request id by this user created, if any.
  const Job* FindRequest(const std::string& user, const std::string& request_id) const;

  // Writes a new job with its first events and keeps it (with its id); nothing changes if the
  // store refuses.
  StatusOr<Job*> Create(Job job, std::vector<JobEvent> events);
  // Puts the job in pending() or active() as its state says: called after every change of state.
  void Reindex(const Job& job);

  // Called after a sweep trial's job is written in a terminal state (Sweeps::TrialJobEnded);
  // it may be called again for the same job.
  void SetTrialEndListener(std::function<void(const Job&)> listener) {
    trial_ended_ = std::move(listener);
  }
  // Called after a job that others depend on is written in a terminal state
  // (JobLifecycle::DependencyEnded); it may be called again for the same job.
  void SetDependencyEndListener(std::function<void(const Job&)> listener) {
    dependency_ended_ = std::move(listener);
  }

  // The jobs of an array (docs/job-spec.md, "Arrays") in index order, by the array's id; null
  // for an id that is no array's.
  const std::vector<JobId>* ArrayJobs(JobId array) const;
  // How many of an array's jobs hold resources now.
  int ArrayActive(JobId array) const;
  // Whether every job `job` depends on has ended the way it says (none: true).
  bool DependenciesMet(const Job& job) const;
  // Why `job` can never start for its dependencies: the first that ended the other way (or is
  // gone); none while they may still be met.
  std::optional<std::string> DependencyNeverMet(const Job& job) const;
  // The pending jobs that depend on `job` (depends_on), in id order.
  std::vector<JobId> DependentsOf(JobId job) const;
  // Writes the job (and bumps its version) with its events and what was noted for it since; on
  // failure, fails stop and returns the error.
  Status Persist(Job& job, std::vector<JobEvent> events);
  // Persist where the caller has no one to return an error to (a failure has stopped the master).
  void Commit(Job& job, std::vector<JobEvent> events);
  // An event of the job, stamped now.
  JobEvent Event(const Job& job, std::string type, std::string message) const;
  // Records the task's hold on its resources as it is now (taken, or given back once it ended),
  // to be written with the job's next Persist.
  void NoteHold(const Job& job, const Task& task);
  // The job ended in a way that teaches the runtime history (TeachesRunTime): it is recorded
  // with the job's next Persist, in the same write, and the history changes once that is durable.
  void NoteEnd(const Job& job);

  // Every event of the job, or a range of them. kNotFound.
  StatusOr<std::vector<JobEvent>> Events(JobId id);
  StatusOr<state::EventPage> Events(JobId id, const state::EventRange& range);

  // What ended jobs cost, and the estimate it gives for the job (cached by key).
  const scheduler::RuntimeHistory& history() const { return history_; }
  std::optional<RuntimeEstimate> EstimateFor(const Job& job) const;

 private:
  Journal& journal_;
  const Clock& clock_;
  std::map<JobId, Job> jobs_;
  std::set<JobId> pending_;  // PENDING
  std::map<std::string, int> pending_by_user_;
  std::map<std::string, int> pending_by_team_;
  std::set<JobId> active_;  // STARTING, RUNNING, STOPPING: they hold resources
  // (user, request id) -> job, for idempotent submission.
  std::map<std::pair<std::string, std::string>, JobId> requests_;
  // Task holds noted and not yet written, by job: they go with the job's next write.
  std::map<JobId, std::vector<state::TaskUsage>> unsaved_holds_;
  // Loaded at start, changed only once the store has the change; the jobs whose end it has yet
  // to record (NoteEnd); estimates by key, a recorded end drops those it may change.
  scheduler::RuntimeHistory history_;
  std::set<JobId> unsaved_ends_;
  mutable scheduler::EstimateCache estimates_;
  std::function<void(const Job&)> trial_ended_;
  std::function<void(const Job&)> dependency_ended_;
  std::map<JobId, std::vector<JobId>> arrays_;   // array id -> its jobs, in index order
  std::map<JobId, int> array_active_;            // array id -> its jobs in active_
  std::map<JobId, std::set<JobId>> dependents_;  // job -> the jobs that depend on it
  // Indexes a job's array and dependencies, once, as it is created or loaded.
  void IndexLinks(const Job& job);
};

}  // namespace cohort::master
