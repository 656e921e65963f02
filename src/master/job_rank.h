// Where the policy puts a waiting job among its team's jobs, and why, in words (cohort why): its
// least-attained-service level, the estimate of what jobs like it cost, its promotion for waiting.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/time.h"
#include "model/plan.h"
#include "scheduler/scheduler.h"

namespace cohort::master {

struct JobRank {
  int level = 0;  // least-attained-service level, from 0
  int levels = 1;
  Duration attained{};  // GPU time in its earlier attempts
  // Policy default only: what jobs like it cost (none: nothing to go by yet), and when it began
  // to wait and was or will be promoted for it.
  std::optional<RuntimeEstimate> estimate;
  std::optional<Timestamp> waiting_since;
  std::optional<Timestamp> promoted_at;
  bool promoted = false;
};

// The rank of `job` under `config`'s policy at `now`; none for policies that do not rank jobs
// this way (fifo and the oracles).
std::optional<JobRank> RankOfJob(const scheduler::SchedulerConfig& config, const PendingJob& job,
                                 Timestamp now);
// The rank in sentences: "promoted: waited 3h10m (more than 2h)" (or when it will be), then
// "level 1 of 0-2 (1 to 16 GPU-hours): 4.2 GPU-hours attained; estimated 30 GPU-hours from 12
// finished jobs of team vision with 8 GPUs, about 25.8 GPU-hours left".
std::vector<std::string> DescribeRank(const JobRank& rank, const scheduler::SchedulerConfig& config,
                                      Timestamp now);
// GPU time for people: "30 GPU-hours", "4.2 GPU-hours", "12 GPU-minutes", "0.4 GPU-seconds".
std::string FormatGpuTime(Duration d);

}  // namespace cohort::master
