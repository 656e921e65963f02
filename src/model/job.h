// A job as the master tracks it: the spec, its state, and the tasks of its current attempt.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/enum_names.h"
#include "common/status.h"
#include "common/time.h"
#include "model/job_id.h"
#include "model/job_spec.h"
#include "model/restored_checkpoint.h"
#include "model/trial.h"
#include "model/upload_progress.h"

namespace cohort {

// One task of one attempt of a job: how the master and its agents name a task to each other.
struct TaskId {
  JobId job = 0;
  int attempt = 0;
  std::string role;
  int index = 0;

  // "<job>.<attempt>.<role>.<index>": the name of the task's directory on its agent and of its
  // log in URLs. Roles never contain dots (the spec forbids them), so the form is unambiguous.
  std::string ToString() const;
  auto operator<=>(const TaskId&) const = default;
};
// Reads ToString()'s form back. kInvalidArgument, naming the text, for anything else.
StatusOr<TaskId> ParseTaskId(std::string_view text);

// A job id as people and URLs write it: a positive decimal integer. kInvalidArgument, naming
// the text, for anything else.
StatusOr<JobId> ParseJobId(std::string_view text);

// PENDING -> STARTING -> RUNNING -> SUCCEEDED
//                \          \-> STOPPING -> FAILED | KILLED | PENDING (next attempt)
// A pending job holds no resources. STARTING: placed, tasks sent to agents, not all running
// yet. STOPPING: the gang is being stopped (kill, a failed task, a timeout); its resources are
// held until every agent confirms that its tasks are gone.
enum class JobState { kPending, kStarting, kRunning, kStopping, kSucceeded, kFailed, kKilled };
inline constexpr auto kJobStateNames = std::to_array<EnumName<JobState>>({
    {JobState::kPending, "PENDING"},
    {JobState::kStarting, "STARTING"},
    {JobState::kRunning, "RUNNING"},
    {JobState::kStopping, "STOPPING"},
    {JobState::kSucceeded, "SUCCEEDED"},
    {JobState::kFailed, "FAILED"},
    {JobState::kKilled, "KILLED"},
});
const char* JobStateName(JobState s);
// Ignores case: "running" is RUNNING.
std::optional<JobState> ParseJobState(std::string_view name);
bool IsTerminal(JobState s);

// ASSIGNED: sent to its agent, not reported running yet.
enum class TaskState { kAssigned, kRunning, kSucceeded, kFailed, kKilled, kLost };
inline constexpr auto kTaskStateNames = std::to_array<EnumName<TaskState>>({
    {TaskState::kAssigned, "ASSIGNED"},
    {TaskState::kRunning, "RUNNING"},
    {TaskState::kSucceeded, "SUCCEEDED"},
    {TaskState::kFailed, "FAILED"},
    {TaskState::kKilled, "KILLED"},
    {TaskState::kLost, "LOST"},
});
const char* TaskStateName(TaskState s);
std::optional<TaskState> ParseTaskState(std::string_view name);
bool IsTerminal(TaskState s);

struct Task {
  std::string role;
  int index = 0;  // within its role
  int rank = 0;   // within the job, in the order of the spec's task groups
  Resources resources;
  std::string node_id;
  std::string host;  // the node's address, as other tasks reach it
  std::vector<int> gpus;
  int port = 0;  // assigned by the master from the node's port range
  TaskState state = TaskState::kAssigned;
  bool stop_requested = false;
  // An elastic replica taken away (shrink): its end is neither a failure nor a success.
  bool scaled_down = false;
  std::optional<int> exit_code;
  std::optional<int> signal;
  int64_t pid = 0;
  std::optional<Timestamp> started_at;
  std::optional<Timestamp> finished_at;
  // When the master took its resources (placement or growth): the start of its usage
  // (state/usage.h), which started_at, the agent's report of the process start, is not.
  std::optional<Timestamp> held_since;
  // The node's desired-state version that first included this task: an agent report that
  // has applied this version and does not mention the task means the task is gone.
  uint64_t assigned_version = 0;

  std::string Name() const { return role + "/" + std::to_string(index); }
};

// The outcome of one finished attempt, kept for `cohort status`.
struct AttemptSummary {
  int number = 0;
  std::optional<Timestamp> started_at;
  std::optional<Timestamp> finished_at;
  std::string result;  // "succeeded", "failed: worker/1 exited with code 3", ...
  // Where each of its tasks ran ("worker/0" -> "node-a"): what a node may ship logs and metrics
  // for after the attempt ended. Empty in records written before it was kept.
  std::map<std::string, std::string> nodes;
  // The checkpoint it started from; none for a fresh start.
  std::optional<RestoredCheckpoint> restored_from = {};
};

// Job::excluded_nodes: a node the job is kept off for as long as it lives.
inline constexpr Timestamp kExcludedForGood = Timestamp::max();

struct Job {
  JobId id = 0;
  JobSpec spec;
  std::string user;
  JobState state = JobState::kPending;
  int attempt = 0;          // the current (or last) attempt; 0 until first placed
  std::vector<Task> tasks;  // the current attempt's tasks; empty while pending
  Timestamp submitted_at;
  std::optional<Timestamp> placed_at;   // of the current attempt
  std::optional<Timestamp> running_at;  // every task of the current attempt running
  std::optional<Timestamp> finished_at;
  // Why it is pending, or why it ended the way it did.
  std::string message;
  // While STOPPING: the state to enter once every task is gone.
  std::optional<JobState> stop_target;
  // While STOPPING because it was preempted: the job it makes room for.
  std::optional<JobId> preempted_for;
  // Attempts that ended in a failure or a node loss; restart.max_attempts bounds these, not
  // preemptions.
  int failures = 0;
  // While PENDING after a failure: the restart backoff keeps it waiting until then.
  std::optional<Timestamp> not_before;
  // The client's name for the submission (idempotent retries), and a digest of the spec it
  // came with: the same name with another spec is a conflict, not a retry. Empty: none given.
  std::string request_id;
  std::string request_digest;
  int preemptions = 0;
  // Nodes it may not be placed on until the time given: where --reclaim-idle-gpus took its idle
  // GPUs (master/job_lifecycle.h, ReclaimIdle), or, until kExcludedForGood, where a task of it
  // could not start for a cause of that node's (no Unix account for its user;
  // model/start_failure.h). An entry that has passed means nothing.
  std::map<std::string, Timestamp> excluded_nodes;
  // Times it was requeued because its GPUs were idle: a job is requeued so once, then it ends.
  int idle_reclaims = 0;
  // The newest checkpoint a task of the job reported (docs/observability.md, "Checkpoint
  // reports"), by its agent's clock, over all attempts; none before the first.
  std::optional<Timestamp> last_checkpoint_at;
  // The latest kMaxAttemptSummaries attempts (RecordAttempt); `attempt` says how many there were.
  std::vector<AttemptSummary> history;
  // The GPU time of the attempts dropped from `history` (ServiceOf each), which the job's
  // attained service still counts.
  Duration dropped_service{};
  // While PENDING: why it is kept from the scheduler until released ("its sweep 3 is paused");
  // empty: not held. A held job is not waiting for the scheduler (JobBook::pending()).
  std::string hold;
  // The sweep trial this job is (docs/sweeps.md); none for a job submitted on its own.
  std::optional<TrialRef> trial;
  // The array this job is one of (docs/job-spec.md, "Arrays"); none for a job of its own.
  std::optional<ArrayElement> array = {};
  // Its outputs in the object store (docs/data.md, "Outputs"): the latest upload of its output
  // directory, which the agent of its first task begins once that task has ended; none before.
  std::optional<UploadProgress> artifacts;
  // The checkpoint its current attempt started from (docs/data.md, "Checkpoints"), as the
  // agent of its first task reported it; none for a fresh start.
  std::optional<RestoredCheckpoint> restored_from;
  // Bumped on every change; watchers wait for it to move.
  uint64_t version = 0;

  // The identity of one of its current attempt's tasks on its agent.
  TaskId IdOf(const Task& t) const { return TaskId{id, attempt, t.role, t.index}; }
};

// Attempt summaries a job keeps. Preemptions do not count against restart.max_attempts, so a
// job may run any number of attempts; its record, written on every change and sent whole by
// `GET /jobs/{id}`, keeps only the latest. Earlier attempts stay in the usage records.
inline constexpr size_t kMaxAttemptSummaries = 100;
// Adds `summary` to the job's history, dropping the oldest beyond kMaxAttemptSummaries (their
// GPU time goes to `dropped_service`).
void RecordAttempt(Job& job, AttemptSummary summary);
// The GPU time an ended attempt had: its length times the job's GPUs (0 if it never started).
Duration ServiceOf(const Job& job, const AttemptSummary& attempt);

struct JobEvent {
  JobId job_id = 0;
  Timestamp time;
  std::string type;  // submitted, placed, running, task_exited, stopping, requeued, finished...
  std::string message;
};

}  // namespace cohort
