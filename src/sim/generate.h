// Synthetic traces shaped like the ITP traces (../shared/traces/README.md): the fractions of
// 1-GPU, 2-4, 5-8 and larger jobs, and heavy-tailed durations with the same median, p90 and p99.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/trace.h"

namespace cohort::sim {

struct GenerateOptions {
  size_t jobs = 1000;
  uint64_t seed = 1;
  double jobs_per_hour = 60;  // Poisson arrivals
  int teams = 0;              // 0: no team column; else team-0 .. team-(K-1)
  int users = 20;
};

std::vector<TraceJob> GenerateTrace(const GenerateOptions& options);

}  // namespace cohort::sim
