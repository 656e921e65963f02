// Team quotas from a trace (`cohort sim run --teams auto`): one team per team the trace's jobs
// name ("default" for jobs that name none), each guaranteed GPUs in proportion to the GPU-hours
// its jobs ask for, summing exactly to the cluster's GPUs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/plan.h"
#include "sim/trace.h"

namespace cohort::sim {

struct TraceTeam {
  std::string name;
  size_t jobs = 0;         // a sweep: its trials
  double gpu_seconds = 0;  // sum of duration x GPUs (an elastic job: at its minimum; a sweep: its
                           // trials, by ExpectedTrialLength)
};

// The teams of the trace, by name.
std::vector<TraceTeam> TeamsOfTrace(const Trace& trace);

// Splits `total` into whole parts proportional to `weights` (largest remainder: each part gets
// the whole part of its exact share, then the parts with the largest remainders one more, ties
// to the earlier part). Parts of zero weight get nothing; all zero: equal weights.
std::vector<int64_t> LargestRemainder(const std::vector<double>& weights, int64_t total);

// Guaranteed GPUs per team, proportional to their GPU-seconds, summing to `gpus`; every team gets
// at least 1 when there are enough GPUs (taken from the team with the most). No borrowing limit.
std::vector<TeamQuota> QuotasByGpuHours(const std::vector<TraceTeam>& teams, int64_t gpus);

}  // namespace cohort::sim
