// The job lifecycle: submission, kill, an attempt started on an accepted placement, grown and
// shrunk, preempted, stopped (the gang asked to stop, and what it becomes once every task is
// gone), ended early by a failure and requeued within its restart budget, or stopped past its
// max_runtime. Every change is written with the job (JobBook::Persist) and tells the nodes
// whose desired state it changes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "framework/task_environment.h"
#include "master/job_book.h"
#include "master/journal.h"
#include "master/master_config.h"
#include "master/node_registry.h"
#include "master/scheduling_loop.h"
#include "master/task_secrets.h"
#include "master/teams.h"
#include "model/job.h"
#include "model/start_failure.h"

namespace cohort::master {

class JobLifecycle final : public DecisionTaker {
 public:
  JobLifecycle(const MasterConfig& config, JobBook& jobs, NodeRegistry& nodes,
               SchedulingLoop& scheduling, Journal& journal, const Teams& teams,
               const TaskSecrets& secrets, const Clock& clock);

  // The spec is already validated (model/job_spec_parser.h). Durable when it returns.
  // kTooManyRequests when the user or the team has as many jobs waiting as it may queue.
  // `request_id` (may be empty) names the submission: a retry with the same id by the same user
  // returns the job the first one created instead of a second job (kAlreadyExists if the id
  // came with another spec); `replayed`, if given, says which. `team_note`, if given, says in
  // the job's "submitted" event why it went to its team (the spec named none).
  // `trial`: the job is that trial of a sweep (master/sweeps.h).
  StatusOr<Job> Submit(JobSpec spec, std::string user, std::string request_id, bool* replayed,
                       std::string team_note = {}, std::optional<TrialRef> trial = std::nullopt);
  // Stops every task of the job (SIGTERM, grace period, SIGKILL on the agents); the job is
  // KILLED once every agent confirms. `by` ("user ada") is named in its events.
  // kNotFound; kFailedPrecondition if it already ended.
  StatusOr<const Job*> Kill(JobId id, const std::string& by);
  // Kills every job of the array that has not ended; returns them. kNotFound for an id that is
  // no array's; kFailedPrecondition if every job of it has ended.
  StatusOr<std::vector<const Job*>> KillArray(JobId array, const std::string& by);

  // Dependencies (docs/job-spec.md, "Dependencies"). A job others depend on has ended: those that
  // can never start now end FAILED, saying why; the others may be placed. Also called once at start
  // for every waiting job.
  void DependencyEnded(const Job& ended);
  void CheckDependencies();

  // Keeps a job that has not ended from the scheduler until Release, saying `reason`: a waiting
  // job stops waiting; a placed one stops its gang as a preemption would (its restart budget
  // untouched, its next attempt resumes from its checkpoints) and waits, held, once its tasks
  // are gone. Written with the job's events.
  void Hold(Job& job, std::string reason, std::vector<JobEvent>& events);
  // The hold is over: the job waits for the scheduler again.
  void Release(Job& job, std::vector<JobEvent>& events);
  // Asks every live task of the job to stop; the job finishes as `target` once all are gone.
  void Stop(Job& job, JobState target, std::string reason, std::vector<JobEvent>& events);
  // If a STOPPING job has no live task left, moves it to its target state.
  void FinishIfStopped(Job& job, std::vector<JobEvent>& events);
  // An attempt ends early for `cause`: the gang stops, and is requeued if the restart policy
  // allows (after its backoff, for a failure), or fails.
  void EndAttemptEarly(Job& job, RestartCause cause, std::string reason,
                       std::vector<JobEvent>& events);
  // The master takes back the job's GPUs, idle for `idle` (--reclaim-idle-gpus; `finding` is
  // the advisor's text). The job ends FAILED with that reason unless restart.on includes
  // preempted; then it is requeued once, its restart budget untouched, and kept off the nodes
  // it left idle for as long as it took to find them idle. Reclaimed again, it ends: so a job
  // that idles wherever it runs is stopped at most twice, never in a loop.
  void ReclaimIdle(Job& job, const std::string& finding, Duration idle,
                   std::vector<JobEvent>& events);
  // A task of the job could not start on `node_id` for `kind`, a cause no retry there fixes
  // (model/start_failure.h); `reason` says so. The restart budget is not spent: a cause that holds
  // everywhere fails the job at once; one of the node's excludes the node for the job, which is
  // requeued at once to be placed elsewhere, or fails, naming the nodes tried, when no node that
  // meets its constraints is left. A job already stopping to be requeued fails instead; one
  // stopping for any other end keeps it.
  void CannotStart(Job& job, const std::string& node_id, StartFailure kind, std::string reason,
                   std::vector<JobEvent>& events);
  // Stops the jobs that have run past their max_runtime.
  void StopOverdue(Timestamp now);
  // Ends a session idle for its idle timeout (master/idle_sessions.h): it stops, and ends KILLED
  // with `reason`; a session is never restarted.
  void EndIdleSession(Job& job, const std::string& reason, std::vector<JobEvent>& events);
  // The preemptions of sessions whose warning (SessionPolicy::warning) is over, carried out;
  // those whose session ended meanwhile, forgotten.
  void PreemptWarnedSessions(Timestamp now);
  // Where a session's people hear what is coming: a line to its terminal.
  void SetSessionNotify(std::function<void(JobId, const std::string&)> notify) {
    session_notify_ = std::move(notify);
  }

  // Where the job's checkpoints, outputs and logs go on the storage root.
  framework::JobDirectories DirectoriesOf(const Job& job) const;

  // DecisionTaker: what the scheduling loop decided, made real.
  Status Start(Job& job, const JobPlacement& placement) override;
  void Preempt(const Preemption& preemption) override;
  bool Grow(const Growth& growth) override;
  void Shrink(const cohort::Shrink& shrink) override;
  void TellNode(const std::string& node_id) override { BumpNode(node_id); }

 private:
  // kTooManyRequests, naming the cap and how to get under it, if `user` or `team` has as many
  // PENDING jobs as its cap (MasterConfig::max_queued_per_user, max_queued_per_team) already.
  Status CheckQueueCaps(const std::string& user, const std::string& team, int adding = 1) const;
  // kInvalidArgument naming depends_on[i] for a dependency that does not exist or can never be
  // met (it ended the other way already).
  Status CheckDependencies(const JobSpec& spec) const;
  // Ends a waiting job FAILED because a dependency can never be met.
  void FailForDependency(Job& job, const std::string& why);
  // The node's desired state changed: a new version, announced.
  uint64_t BumpNode(const std::string& node_id);
  // What each task of the job's group `role` carries to its node: its command, env (secrets'
  // values included) and workdir.
  int64_t GroupTextBytes(const Job& job, const std::string& role) const;
  // What the node's desired state carries now: its live tasks' text and Cohort's variables.
  int64_t NodeTextBytes(const std::string& node_id) const;
  // kUnavailable, saying so, if the tasks of `tasks` from `first_new` on that are placed on
  // `node_id` would take its desired state over kMaxNodeTaskTextBytes (model/limits.h); `tasks`
  // are all of the job's, as they will be.
  Status FitsDesiredState(const Job& job, const std::vector<Task>& tasks, size_t first_new,
                          const std::string& node_id) const;
  // The next free port of the node's range; 0 if none.
  int AssignPort(NodeRegistry::Entry& node);
  // The scheduler's decision carried out: the victim stops, to be requeued or to fail.
  void PreemptNow(const Preemption& preemption);

  const MasterConfig& config_;
  JobBook& jobs_;
  NodeRegistry& nodes_;
  SchedulingLoop& scheduling_;
  Journal& journal_;
  const Teams& teams_;
  const TaskSecrets& secrets_;
  const Clock& clock_;
  std::function<void(JobId, const std::string&)> session_notify_;
  // Sessions the scheduler preempted, warned and not yet stopped: the decision and when its
  // warning is over. The scheduler's cluster counts each as stopping already.
  struct WarnedPreemption {
    Preemption preemption;
    Timestamp due;
  };
  std::map<JobId, WarnedPreemption> warned_preemptions_;
};

}  // namespace cohort::master
