// The scheduler's input and output: a read-only view of the cluster (nodes, what runs on them,
// teams and their quotas), the pending jobs, and the plan it proposes. The master re-checks a
// plan against its latest state before applying it. docs/scheduler.md explains the rules.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/job.h"
#include "model/node.h"
#include "model/resources.h"

namespace cohort {

struct NodeCapacity {
  std::string node_id;
  Resources total;
  Resources free;              // total minus what live tasks hold (running or stopping)
  std::vector<int> free_gpus;  // indices of the GPUs nobody holds, ascending
  std::string gpu_model;
  std::map<std::string, std::string> labels;  // "rack" groups nodes for placement
  // How its GPUs are connected; null: all alike. Shared, so that copies stay cheap.
  std::shared_ptr<const GpuTopology> topology;
  // A new field goes into CopyCapacity too.
  bool operator==(const NodeCapacity&) const = default;
};

// Copies `from` into `to` as `to = from` would, but assigns the labels only where they differ:
// they stay the same for a node from one pass to the next, a pass copies every node four times
// (the snapshot and three capacity indexes), and a map assigned rebuilds every label's strings
// (7.5% of a replay of all ITP jobs under las). Comparing the id and GPU model first as well
// made the scheduler benchmark's passes slower, not faster: they are plain assignments.
inline void CopyCapacity(const NodeCapacity& from, NodeCapacity& to) {
  to.node_id = from.node_id;
  to.total = from.total;
  to.free = from.free;
  to.free_gpus = from.free_gpus;
  to.gpu_model = from.gpu_model;
  if (to.labels != from.labels) to.labels = from.labels;
  to.topology = from.topology;
}

// The one way to take a task's resources out of a node's free capacity and to put them back:
// the master, the simulator, the scheduler's what-ifs and the test builders all go through here.
//
// Whether `resources`, on exactly the GPUs `gpus`, are free on `node` (every GPU free, the
// number of GPUs matching, CPUs and memory enough).
bool IsFree(const NodeCapacity& node, const Resources& resources, const std::vector<int>& gpus);
// Takes them from what is free and returns what was taken. Exact: they must be free (IsFree);
// anything else is a broken invariant. Partial: GPUs already taken are skipped and CPUs and
// memory taken only as far as they are free (a reservation may cover GPUs that are busy now).
Resources TakeFree(NodeCapacity& node, const Resources& resources, const std::vector<int>& gpus,
                   bool partial = false);
// Puts them back and returns what was given. Exact: none of them may be free already. Partial:
// GPUs already free are skipped, and CPUs and memory given only up to the node's total.
Resources GiveFree(NodeCapacity& node, const Resources& resources, const std::vector<int>& gpus,
                   bool partial = false);

struct TaskRequest {
  TaskRequest() = default;
  TaskRequest(std::string role, int index, Resources resources, bool distinct_nodes = false)
      : role(std::move(role)), index(index), distinct_nodes(distinct_nodes), resources(resources) {}

  std::string role;
  int index = 0;
  // Its group's replicas each need a node of their own (TaskGroupSpec::distinct_nodes). In the
  // padding after `index`, so that a request stays 64 bytes as before (after `resources` it made
  // 72): passes and snapshots walk and copy every running task.
  bool distinct_nodes = false;
  Resources resources;
};

// Whether two tasks of one job may run on the same node: not two replicas of a group whose
// replicas each need a node of their own (TaskGroupSpec::distinct_nodes). The one rule: the
// scheduler packs by it (CapacityIndex::Place, elastic growth), and the cluster state refuses a
// placement or a growth that breaks it (cluster::ClusterState::Start, Grow).
inline bool MayShareNode(const TaskRequest& a, const TaskRequest& b) {
  return !(a.distinct_nodes && b.distinct_nodes && a.role == b.role);
}

// What a job's tasks need together.
inline Resources TotalOf(const std::vector<TaskRequest>& tasks) {
  Resources r;
  for (const auto& t : tasks) r += t.resources;
  return r;
}

struct TaskPlacement {
  std::string node_id;
  std::vector<int> gpus;
};

// Whether some of `tasks` need a node apart from the others of their group: without such a task
// there is nothing to check. Inline: a pass asks it of every waiting job.
inline bool AnyOnDistinctNodes(const std::vector<TaskRequest>& tasks) {
  for (const auto& t : tasks) {
    if (t.distinct_nodes) return true;
  }
  return false;
}
// Whether `placement` (by task) keeps MayShareNode for every two of `tasks` on one node.
bool KeepsDistinctNodes(const std::vector<TaskRequest>& tasks,
                        const std::vector<TaskPlacement>& placement);

// What jobs like this one cost before they ended (scheduler/runtime_history.h): the default
// policy orders jobs by it. Never the job's own run time, which no one knows before it ends.
struct RuntimeEstimate {
  Duration gpu_time{};  // estimated total GPU time (GPU-seconds as a duration)
  int64_t samples = 0;  // finished jobs behind it
  std::string basis;    // which jobs: "of team vision with 8 GPUs"
  // Which key answered: 0 the finest (team, user, name, GPUs) to 5 the coarsest (every job).
  int level = 0;
  bool operator==(const RuntimeEstimate&) const = default;
};

// A job that holds resources now.
struct RunningJob {
  JobId job_id = 0;
  std::string team;
  std::string user;
  int priority = 0;
  Timestamp submitted_at;
  Timestamp started_at;               // when its current attempt was placed
  std::optional<Timestamp> ends_by;   // started_at + max_runtime, if it has one
  bool stopping = false;              // already being stopped: its resources are on their way back
  std::optional<JobId> stopping_for;  // the job it was preempted for, if it was
  std::vector<TaskRequest> tasks;     // what each task holds...
  std::vector<TaskPlacement> placement;  // ...and where
  std::vector<Timestamp> task_started;   // when each task was placed (grown replicas: later)
  Duration attained{};                   // GPU time received by earlier attempts
  int preemptions = 0;                   // times it has been preempted before
  // Simulation only (see PendingJob::oracle_remaining): when it will truly end.
  std::optional<Timestamp> oracle_ends_at;
  // When it last began to wait before this attempt (see PendingJob::waiting_since): a job that
  // waited long enough to be promoted is protected for a while after it starts.
  std::optional<Timestamp> waiting_since;
  // The last checkpoint it reported during this attempt: preempting it loses the work since.
  std::optional<Timestamp> last_checkpoint_at;
  // Elastic task groups: replicas may be added up to `max` and taken away down to `min`.
  struct ElasticGroup {
    std::string role;
    int min = 0;
    int max = 0;
    Resources per_replica;
    int next_index = 0;  // indices are never reused within an attempt
    // A new replica goes only to a node without one of the group's (TaskRequest::distinct_nodes).
    bool distinct_nodes = false;
  };
  std::vector<ElasticGroup> elastic;
  Constraints constraints;  // where its replicas may run
  // A trial of a hyperparameter sweep (docs/sweeps.md): beyond its team's guarantee it is the
  // first job reclaimed or preempted (docs/scheduler.md, "Preemption"). Copied from
  // PendingJob::sweep_trial when it starts (cluster::RunningFrom).
  bool sweep_trial = false;

  Resources Total() const { return TotalOf(tasks); }
};

// A team's share of the cluster. A team may use up to `guaranteed_gpus` whatever others do, and
// borrow idle GPUs beyond that up to `max_gpus` (unset: no limit); borrowed GPUs are taken back
// by preemption when a team below its guarantee needs them.
struct TeamQuota {
  std::string name;
  int64_t guaranteed_gpus = 0;
  std::optional<int64_t> max_gpus;
};

struct ClusterSnapshot {
  std::vector<NodeCapacity> nodes;  // only nodes that can take work now
  std::vector<RunningJob> running;
  std::vector<TeamQuota> teams;  // a job's team missing here has no guarantee and no limit
};

struct PendingJob {
  JobId job_id = 0;
  std::string team = "default";
  std::string user;
  int priority = 0;
  Timestamp submitted_at;
  std::vector<TaskRequest> tasks;  // in rank order; more than one makes it a gang
  std::optional<Duration> max_runtime;
  Duration attained{};  // GPU time received by earlier attempts (least-attained-service policy)
  Constraints constraints;
  // Running jobs were preempted to make room for it. It comes before every other waiting job
  // until it starts, so that what its victims free goes to it, not back to them.
  bool preempted_for_it = false;
  int preemptions = 0;  // times it has been preempted before
  // When it last began to wait: its submission, or the end of its last attempt. Unset: its
  // submission.
  std::optional<Timestamp> waiting_since;
  // What jobs like it cost before (default policy); unset: nothing to go by yet.
  std::optional<RuntimeEstimate> estimate;
  // Its elastic task groups, as they will be once it runs (next_index: past its minimum).
  std::vector<RunningJob::ElasticGroup> elastic;
  // Simulation only: how long it would truly run if started now (its work left, or its
  // max_runtime if that comes first). Only the oracle policies (sjf-oracle, srtf-oracle) read it:
  // they exist to show how far the real policies are from perfect knowledge. The master never
  // sets it and refuses those policies.
  std::optional<Duration> oracle_remaining;
  // A trial of a hyperparameter sweep (RunningJob::sweep_trial). The master sets it from the
  // job's trial reference (Job::trial) where it builds the pending job
  // (SchedulingLoop::PendingOf, master/scheduling_loop.cc, with a helper in job_views.cc), so
  // that a restored running job has it too; the simulator from its sweep rows.
  bool sweep_trial = false;
};

// Every task of one job, in the job's rank order: a gang is placed whole or not at all.
struct JobPlacement {
  JobId job_id = 0;
  std::vector<TaskPlacement> tasks;
};

// Why a job is preempted: the rule that allowed it.
enum class PreemptionCause {
  kPriority,      // for a job of higher priority of its team
  kQuotaReclaim,  // its team borrows; the waiting job's team is below its guarantee
  kLevel,         // for a job that has had less GPU time (las, and default within a team)
  kOracle,        // srtf-oracle: for a job with less GPU time left
  kMove,          // moved to free GPUs elsewhere, to make room for a job within its guarantee
};
inline constexpr PreemptionCause kPreemptionCauses[] = {
    PreemptionCause::kPriority, PreemptionCause::kQuotaReclaim, PreemptionCause::kLevel,
    PreemptionCause::kOracle, PreemptionCause::kMove};
// Its name in metrics and reports: "priority", "quota_reclaim", "level", "oracle", "move".
constexpr const char* PreemptionCauseName(PreemptionCause cause) {
  switch (cause) {
    case PreemptionCause::kPriority:
      return "priority";
    case PreemptionCause::kQuotaReclaim:
      return "quota_reclaim";
    case PreemptionCause::kLevel:
      return "level";
    case PreemptionCause::kOracle:
      return "oracle";
    case PreemptionCause::kMove:
      return "move";
  }
  return "unknown";
}

// A running job to stop (SIGTERM, grace period, SIGKILL) and requeue, so that `for_job` can run.
struct Preemption {
  JobId victim = 0;
  JobId for_job = 0;
  std::string reason;  // "preempted by job 12 (priority high) of team vision"
  PreemptionCause cause = PreemptionCause::kPriority;
};

// A job left pending by this pass, and why, in words a user understands.
struct PendingReason {
  JobId job_id = 0;
  std::string reason;  // one line, for `cohort jobs`
  // No node of the cluster as it stands could ever hold it (not just busy right now).
  bool unschedulable = false;
  // The latest time it is expected to start, if it holds a reservation.
  std::optional<Timestamp> reserved_start;
  // The nodes its reservation holds (where it will most likely start): the master fetches its
  // datasets there ahead of its start. Empty without a reservation.
  std::vector<std::string> reserved_nodes = {};
};

// New replicas for a running elastic job, into GPUs nobody else wants now.
struct Growth {
  JobId job_id = 0;
  std::vector<TaskRequest> tasks;
  std::vector<TaskPlacement> placement;
};

// Replicas of a running elastic job to stop (highest index first), for `for_job`.
struct Shrink {
  JobId job_id = 0;
  std::string role;
  std::vector<int> indices;
  JobId for_job = 0;
  std::string reason;
};

struct Plan {
  std::vector<JobPlacement> placements;
  std::vector<Preemption> preemptions;
  std::vector<Growth> growths;
  std::vector<Shrink> shrinks;
  std::vector<PendingReason> waiting;
  // Time alone will change a decision then (a job that may be preempted for a waiting one
  // reaches its minimum run time, or one moves to a later least-attained-service queue): run a
  // pass at that time even if nothing else happens.
  std::optional<Timestamp> recheck_at;
};

}  // namespace cohort
