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
  // Teams below their guarantee first, the furthest below first (dominant resource share per
  // guaranteed GPU); beyond guarantees, the most deserving job of any team. Within a team, and
  // between teams beyond their guarantees: priority (within a team), then promoted jobs (that
  // waited too long), then least attained service in levels (las_thresholds), then the least
  // expected GPU time left from history (PendingJob::estimate), then submission order. A job may
  // preempt its team's jobs of a later level that are not protected.
  kFairShare,
  // Submission order, nothing else (the baseline).
  kFifo,
  // Least attained service (Tiresias, discretised): jobs are in queues by the GPU time they have
  // had (see las_thresholds); a lower queue goes first and may preempt jobs of a higher one;
  // within a queue, submission order.
  kLeastAttainedService,
  // References for the simulator, not policies: they read PendingJob::oracle_remaining, the true
  // run time no real scheduler knows, to show how far the real policies are from perfect
  // knowledge. Shortest remaining GPU time (run time x GPUs) first, then submission order; their
  // reservations use true ends. sjf-oracle never preempts for its order; srtf-oracle preempts
  // running jobs with more GPU time left than the waiting job needs.
  kSjfOracle,
  kSrtfOracle,
};
inline constexpr auto kPolicyNames = std::to_array<EnumName<Policy>>({
    {Policy::kFairShare, "default"},
    {Policy::kFifo, "fifo"},
    {Policy::kLeastAttainedService, "las"},
    {Policy::kSjfOracle, "sjf-oracle"},
    {Policy::kSrtfOracle, "srtf-oracle"},
});
const char* PolicyName(Policy p);
// Whether the policy reads true durations (simulation only).
inline bool IsOracle(Policy p) { return p == Policy::kSjfOracle || p == Policy::kSrtfOracle; }
// kInvalidArgument, listing the names, for an unknown one.
StatusOr<Policy> ParsePolicy(std::string_view name);

struct SchedulerConfig {
  Policy policy = Policy::kFairShare;
  // With backfill, the first jobs that cannot start get a reservation (the earliest time their
  // resources will be free), and jobs behind them start only if they cannot delay it. Without,
  // a job that cannot start blocks every job behind it (strict order).
  bool backfill = true;
  // How many waiting jobs hold a reservation at once, besides jobs within their team's
  // guarantee (a team's reservations within it are bounded by the guarantee's GPUs instead).
  int reservations = 4;
  // A running job without max_runtime is assumed to run this long, for reservations; unset:
  // forever (it never frees its resources in the estimate).
  std::optional<Duration> default_runtime;
  // A higher-priority job may preempt lower-priority jobs of its own team.
  bool priority_preemption = true;
  // A team below its guarantee takes GPUs back from teams that borrow beyond theirs.
  bool quota_reclaim = true;
  // A job is never preempted before it has run this long (no thrashing).
  Duration min_runtime_before_preemption = std::chrono::minutes(1);
  // Policies las and default: the GPU time (GPU-seconds as a duration) at which a job moves to
  // the next queue (level). docs/scheduler.md says why these.
  std::vector<Duration> las_thresholds = {std::chrono::hours(1), std::chrono::hours(16)};
  // Policy default, starvation: a waiting job is promoted once it has waited
  // min(max_wait, max(promote_after, promote_factor x the time it has run)). A promoted job goes
  // before the others of its team and, once started, is not preempted for a job of an earlier
  // level until it has run protected_quantum or reported a checkpoint.
  Duration promote_after = std::chrono::hours(2);
  double promote_factor = 2;
  Duration max_wait = std::chrono::hours(24);
  Duration protected_quantum = std::chrono::hours(1);
  // Policy default: only jobs of at least this level are preempted for jobs of earlier levels
  // (2: jobs that have had 16 GPU-hours, with the default levels). docs/scheduler.md says why.
  int min_victim_level = 2;
  // Policy default: a job preempts for its level only once it has waited this long (since it
  // last began to wait): in a busy cluster GPUs free up within minutes anyway, and a preemption
  // costs the victim its restart, its work since the last checkpoint and a wait for promotion.
  // docs/scheduler.md says why this long.
  Duration level_preemption_delay = std::chrono::minutes(30);
  // Policy default: a job within its team's guarantee that has waited this long, for want of a
  // node with room although enough GPUs are free across the cluster, moves smaller jobs (stops
  // them, to restart on free GPUs elsewhere) to make that room. Unset: never.
  // docs/scheduler.md says why this long.
  std::optional<Duration> move_after = std::chrono::minutes(1);
};

struct SchedulingInput {
  const ClusterSnapshot& cluster;
  const std::vector<PendingJob>& pending;
  Timestamp now;
  // The jobs that hold resources, if not cluster.running (which is then ignored): the cluster
  // core lends its own (cluster::ClusterState::View), so that a pass copies none of them.
  const std::vector<const RunningJob*>* running = nullptr;
  // Whether waiting jobs get their reasons in words (PendingReason::reason). The simulator shows
  // none: under strict fifo, copying one line for each of thousands of jobs behind a blocked
  // head, every pass, was a third of its replay. Every decision is the same either way.
  bool reasons = true;
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
