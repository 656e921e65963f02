// The scheduler decides which pending jobs start where, and which running jobs must make room.
// It is a pure function of its input: (cluster snapshot, pending jobs, now, config) -> Plan. No
// I/O, no threads, no clock; the master and the simulator drive the same code.
//
// Contract (docs/scheduler.md has the reasons):
//  - A job is placed whole or not at all: every task of a gang gets its node and GPUs in one
//    JobPlacement, or the job appears in Plan::waiting with a reason. A waiting job holds
//    nothing.
//  - No GPU, CPU or byte of memory is given twice within one plan, nor beyond the snapshot's free
//    capacity.
//  - A team never goes beyond its max_gpus.
//  - Preemptions name only victims whose resources the waiting job needs in order to fit.
//  - The same input gives the same plan.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/enum_names.h"
#include "common/status.h"
#include "common/time.h"
#include "model/plan.h"

namespace cohort::scheduler {

// The order in which pending jobs are considered.
enum class Policy {
  // Teams by weighted fair share (dominant resource, weighted by guaranteed GPUs; teams below
  // their guarantee first); within a team: priority, then the user with the least in use, then
  // submission order.
  kFairShare,
  // Submission order, nothing else (the baseline).
  kFifo,
  // Least attained service (Tiresias, discretised): jobs are in queues by the GPU time they have
  // had (see las_thresholds); a lower queue goes first and may preempt jobs of a higher one;
  // within a queue, submission order.
  kLeastAttainedService,
};
inline constexpr auto kPolicyNames = std::to_array<EnumName<Policy>>({
    {Policy::kFairShare, "default"},
    {Policy::kFifo, "fifo"},
    {Policy::kLeastAttainedService, "las"},
});
const char* PolicyName(Policy p);
// kInvalidArgument, listing the names, for an unknown one.
StatusOr<Policy> ParsePolicy(std::string_view name);

struct SchedulerConfig {
  Policy policy = Policy::kFairShare;
  // With backfill, the first jobs that cannot start get a reservation (the earliest time their
  // resources will be free), and jobs behind them start only if they cannot delay it. Without,
  // a job that cannot start blocks every job behind it (strict order).
  bool backfill = true;
  int reservations = 4;  // how many waiting jobs hold a reservation at once
  // A running job without max_runtime is assumed to run this long, for reservations; unset:
  // forever (it never frees its resources in the estimate).
  std::optional<Duration> default_runtime;
  // A higher-priority job may preempt lower-priority jobs of its own team.
  bool priority_preemption = true;
  // A team below its guarantee takes GPUs back from teams that borrow beyond theirs.
  bool quota_reclaim = true;
  // A job is never preempted before it has run this long (no thrashing).
  Duration min_runtime_before_preemption = std::chrono::minutes(1);
  // Policy las: the GPU time (GPU-seconds as a duration) at which a job moves to the next queue.
  std::vector<Duration> las_thresholds = {std::chrono::hours(1)};
};

struct SchedulingInput {
  const ClusterSnapshot& cluster;
  const std::vector<PendingJob>& pending;
  Timestamp now;
};

struct PassResidue;  // incremental.h

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual Plan Schedule(const SchedulingInput& input) = 0;
  // The same pass, leaving in `residue` what decisions between passes need (incremental.h).
  virtual Plan Schedule(const SchedulingInput& input, PassResidue& residue) = 0;
  virtual const SchedulerConfig& config() const = 0;
};

std::unique_ptr<Scheduler> NewScheduler(SchedulerConfig config = {});

}  // namespace cohort::scheduler
