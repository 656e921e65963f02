// The cluster as the scheduler sees it, kept in one place: nodes with their free capacity, the
// jobs that hold resources (running, or stopping with their resources on the way back), the
// teams, and the claims of pending jobs that others were preempted for. The master and the
// simulator each keep one, change it only through these methods, and hand the scheduler its
// Snapshot(); nothing else takes a placement out of free capacity.
//
// Pure, like the scheduler: no clock (times are arguments), no I/O, no threads. Not thread-safe.
//
// Every change is re-checked against the state as it is now: a placement whose GPUs, CPUs or
// memory are no longer all free is refused whole and changes nothing, so a plan computed on an
// older snapshot can never give one GPU to two tasks. Inputs from outside (a node that registers
// again with fewer GPUs than its tasks hold, a task the state does not know) never break an
// invariant: they are ignored or clamped, and said so in the result.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/plan.h"

namespace cohort::cluster {

// What a plan did once re-checked against the state: the parts that were applied, in the
// plan's order. A part that no longer fits is left out and makes the result inconsistent (a
// new full pass is due).
struct Applied {
  std::vector<JobPlacement> placements;
  std::vector<Preemption> preemptions;
  std::vector<Growth> growths;
  std::vector<Shrink> shrinks;
  bool consistent = true;
};

class ClusterState {
 public:
  // --- Nodes ---
  // Adds a node or changes it (capacity, GPUs, labels, topology). `node.free` and
  // `node.free_gpus` are taken as its whole capacity and GPU list; what is free is that minus
  // what live tasks hold there (GPUs it no longer has are forgotten). Nodes keep the order in
  // which they were first added: it is the placement tie-break.
  void UpsertNode(NodeCapacity node, bool ready);
  // A node that is not ready keeps what its tasks hold but is left out of the snapshot, so
  // nothing new is placed there. Unknown ids are ignored.
  void SetReady(const std::string& node_id, bool ready);
  bool IsReady(const std::string& node_id) const;
  // Forgets a node; whatever tasks held there must have been released first. Unknown ids are
  // ignored.
  void RemoveNode(const std::string& node_id);
  const NodeCapacity* FindNode(const std::string& node_id) const;

  void SetTeams(std::vector<TeamQuota> teams) { teams_ = std::move(teams); }
  const std::vector<TeamQuota>& teams() const { return teams_; }

  // --- Jobs that hold resources ---
  // Starts `job` (its tasks on `placement`, started `now`) if every resource is still free on a
  // ready node and no two replicas of a group with distinct_nodes share a node
  // (KeepsDistinctNodes); otherwise changes nothing and returns false. Also false for a job that
  // already holds resources. Starting a job ends its claim.
  bool Start(const PendingJob& job, const std::vector<TaskPlacement>& placement, Timestamp now);
  // Takes back a job that holds resources, as it was when it was last running: used to rebuild
  // the state from durable records (tasks on nodes that are gone or not ready are kept and hold
  // nothing there). Replaces any job with the same id.
  void Restore(RunningJob job, const std::vector<bool>& leaving = {});
  // New replicas for a running elastic job, with the same re-check as Start: a replica of a
  // group with distinct_nodes (as the job's records say) only on a node where none of the
  // group's replicas is, one on its way out included.
  bool Grow(const Growth& growth, Timestamp now);
  // The job is being stopped (SIGTERM, grace, SIGKILL): it still holds its resources, and the
  // scheduler counts them as on their way back. `for_job`: the job it was preempted for.
  void MarkStopping(JobId job, std::optional<JobId> for_job = std::nullopt);
  // These replicas of an elastic job are being taken away: they still hold their resources and
  // count as a stopping job of their own until released.
  void MarkLeaving(JobId job, const std::string& role, const std::vector<int>& indices);
  // The job reported a checkpoint at `at`: preempting it now loses only the work since. Earlier
  // ones, or ones from before this attempt started, are ignored.
  void NoteCheckpoint(JobId job, Timestamp at);
  // One task has ended: what it held is free again. Returns true if the job holds nothing any
  // more (it has left the cluster). Unknown jobs or tasks are ignored (returns false). A task
  // that ended on its own (not one marked leaving) ends its job's elasticity: it grows and
  // shrinks no more.
  bool ReleaseTask(JobId job, const std::string& role, int index);
  // Every task of the job has ended.
  void ReleaseJob(JobId job);

  const RunningJob* FindJob(JobId job) const;
  // The jobs with a task on the node, in id order: those that losing it hits.
  std::vector<JobId> JobsOn(const std::string& node_id) const;
  // Some running elastic job has fewer replicas than its maximum (a pass may grow it).
  bool AnyElasticCanGrow() const;
  bool Holds(JobId job) const { return jobs_.count(job) > 0; }
  size_t job_count() const { return jobs_.size(); }

  // --- Claims ---
  // A pending job that running jobs were preempted for goes before every other waiting job
  // (PendingJob::preempted_for_it), so that what its victims free goes to it.
  bool Claimed(JobId job) const { return claims_.count(job) > 0; }
  // The job will not start (it was killed while pending, say).
  void DropClaim(JobId job) { claims_.erase(job); }

  // --- The scheduler's view ---
  // Ready nodes with what is free on them; every job that holds resources, its leaving replicas
  // as a stopping job of their own; the teams.
  ClusterSnapshot Snapshot() const;
  // The same without copying the jobs: `into` gets the nodes and teams (its buffers reused, so
  // that a caller that keeps one from pass to pass does not allocate them anew) and no running
  // jobs; `running` points at the state's own, in the snapshot's order. What it points at is
  // valid until the state next changes: a scheduling pass reads it (SchedulingInput::running),
  // then the plan is applied.
  void View(ClusterSnapshot& into, std::vector<const RunningJob*>& running);
  int64_t used_gpus() const { return used_gpus_; }
  // GPUs that a team's jobs hold, running or stopping.
  int64_t team_gpus(const std::string& team) const {
    auto it = team_gpus_.find(team);
    return it == team_gpus_.end() ? 0 : it->second;
  }

  // Applies a plan the scheduler made on Snapshot(): placements (for jobs of `pending`, the
  // list the scheduler was given), then preemptions, growths and shrinks, each re-checked as
  // above. Then claims end that no stopping job is making room for any more: a claim lasts
  // while victims stop for the job and for one pass after that, so that a job that still cannot
  // start goes back to its place in the order instead of staying ahead of all.
  Applied Apply(const Plan& plan, const std::vector<PendingJob>& pending, Timestamp now);

 private:
  struct Node {
    NodeCapacity capacity;  // free: what live tasks leave
    bool ready = false;
  };
  struct Holding {
    RunningJob job;  // its tasks hold exactly what they say, where they say
    // By task: an elastic replica on its way out. Bytes, not bits: every pass looks for any.
    std::vector<uint8_t> leaving;
    std::vector<bool> placed;  // by task: taken on a node this state knows
  };

  Node* MutableNode(const std::string& node_id);
  // Whether some of its replicas are on their way out; if so, the scheduler sees it as two
  // jobs: the replicas that stay, and those that leave as a stopping job of their own.
  static bool AnyLeaving(const Holding& h);
  static void Split(const Holding& h, RunningJob& staying, RunningJob& leaving);
  void NodesAndTeams(ClusterSnapshot& into) const;
  // Whether every task of `tasks` fits on `placement` (ready nodes, free resources), counting
  // the earlier tasks of the same list.
  bool Fits(const std::vector<TaskRequest>& tasks,
            const std::vector<TaskPlacement>& placement) const;
  void TakeTask(Holding& holding, size_t task);
  void Take(Holding& holding, size_t first_task);
  void Release(Holding& holding, size_t task);

  std::vector<Node> nodes_;
  std::unordered_map<std::string, size_t> node_index_;
  std::map<JobId, Holding> jobs_;  // by id: the snapshot lists them in id order
  std::vector<TeamQuota> teams_;
  std::set<JobId> claims_;
  int64_t used_gpus_ = 0;
  std::map<std::string, int64_t, std::less<>> team_gpus_;
  // View(): the jobs with replicas on their way out, split (Split()). A deque: what `running`
  // points at stays where it is while more are added.
  std::deque<RunningJob> split_;
};

// The scheduler's view of a job that has just started on `placement`.
RunningJob RunningFrom(const PendingJob& job, const std::vector<TaskPlacement>& placement,
                       Timestamp now);

}  // namespace cohort::cluster
