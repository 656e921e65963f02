// Drives the scheduler over a cluster core: full passes, and the small decisions between them
// (scheduler/incremental.h) while many jobs wait. The master and the simulator both schedule
// through one Dispatcher, so they make the same decisions at the same moments; what they do with
// a decision (start processes, or schedule a simulated end) is theirs.
//
// Pure, like what it drives: no clock (`now` is an argument), no I/O. Not thread-safe.
//
// Every decision is applied to the ClusterState before it is returned (re-checked there); the
// caller then makes it real. If the caller cannot (no free port, a failed write), it releases
// the job from the cluster and calls Invalidate(), and a full pass decides again.
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "scheduler/incremental.h"
#include "scheduler/scheduler.h"

namespace cohort::dispatch {

// Never decide between passes.
inline constexpr size_t kNeverIncremental = std::numeric_limits<size_t>::max();

struct PassResult {
  bool ran = false;  // false: nothing waits and nothing can grow, so no pass was needed
  cluster::Applied applied;
  std::vector<PendingReason> waiting;   // why each job left pending waits
  std::optional<Timestamp> recheck_at;  // time alone changes a decision then
};

class Dispatcher {
 public:
  // With at least `incremental_above` jobs waiting, arrivals and releases are decided against
  // what the last full pass left; with fewer, the caller runs a full pass for every change.
  Dispatcher(std::unique_ptr<scheduler::Scheduler> scheduler, size_t incremental_above);

  // One full pass over every waiting job; its plan is applied to `cluster`. Sets each job's
  // PendingJob::preempted_for_it from the cluster's claims first.
  PassResult FullPass(cluster::ClusterState& cluster, std::vector<PendingJob>& pending,
                      Timestamp now);

  // True while arrivals and releases are decided between passes.
  bool Incremental(size_t waiting) const {
    return residue_.has_value() && waiting >= incremental_above_;
  }
  // A full pass is due: decisions were made between passes (the order they leave is only
  // approximately the policy's), or the state changed in a way they cannot follow. The caller
  // runs it soon (the master on its next tick), not necessarily at once.
  bool full_pass_due() const { return full_pass_due_; }
  void MarkFullPassDue() { full_pass_due_ = true; }
  // Whether full passes give waiting jobs their reasons in words (SchedulingInput::reasons).
  void set_reasons(bool reasons) { reasons_ = reasons; }

  // A job arrives between passes. Returns its placement, already started in `cluster`, or
  // nothing with the reason it waits in `*reason`.
  std::optional<std::vector<TaskPlacement>> Arrive(cluster::ClusterState& cluster,
                                                   const PendingJob& job, Timestamp now,
                                                   std::string* reason);
  // Tasks of `team` ended between passes and gave back what they held. Returns the waiting jobs
  // that start now (already started in `cluster`), in the last pass's order. `pending` finds a
  // waiting job by id (nullptr if it is gone).
  std::vector<JobPlacement> Released(cluster::ClusterState& cluster, const std::string& team,
                                     const std::vector<TaskRequest>& tasks,
                                     const std::vector<TaskPlacement>& placement,
                                     const std::function<const PendingJob*(JobId)>& pending,
                                     Timestamp now);

  // The policy and settings of the scheduler it drives.
  const scheduler::SchedulerConfig& config() const { return scheduler_->config(); }

  // What the last pass left no longer matches the cluster (a node or a team changed, or a
  // decision could not be carried out): nothing more is decided until the next full pass.
  void Invalidate() {
    residue_.reset();
    full_pass_due_ = true;
  }

 private:
  std::unique_ptr<scheduler::Scheduler> scheduler_;
  size_t incremental_above_;
  bool reasons_ = true;
  std::optional<scheduler::PassResidue> residue_;
  bool full_pass_due_ = false;
  // The cluster as the last pass saw it (ClusterState::View), kept so that the next pass fills
  // the same buffers.
  ClusterSnapshot snapshot_;
  std::vector<const RunningJob*> running_;
};

}  // namespace cohort::dispatch
