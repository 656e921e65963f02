// Synthetic traces shaped like the ITP traces (../shared/traces/README.md): the fractions of
// 1-GPU, 2-4, 5-8 and larger jobs, and heavy-tailed durations with the same median, p90 and p99.
// Optionally over unequal teams: job counts by a Zipf law, and each team its own job shapes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "sim/trace.h"

namespace cohort::sim {

struct GenerateOptions {
  size_t jobs = 1000;
  uint64_t seed = 1;
  double jobs_per_hour = 60;  // Poisson arrivals
  int teams = 0;              // 0: no team column; else team-0 .. team-(K-1)
  // Job counts per team: team k (from 0) gets a share in proportion to (k + 1)^-team_skew
  // (sim/team_split.h); 0: every team equally likely.
  double team_skew = 0;
  // Each team its own job shapes, drawn from the seed: a duration scale, log-uniform in
  // [1/4, 4], and a multi-GPU share, ITP's 16.8% times a factor log-uniform in [1/4, 4] (at most
  // 90%; among multi-GPU jobs, ITP's mix of sizes).
  bool team_shapes = false;
  int users = 20;
  // > 0: arrivals paced instead so that the trace's GPU-hours, spread over the span of its
  // submissions, are `load` x `cluster_gpus` (jobs_per_hour then only sets the draws' order).
  double load = 0;
  int64_t cluster_gpus = 0;
};

std::vector<TraceJob> GenerateTrace(const GenerateOptions& options);

// A sweep row from `cohort sim gen --sweep`: the sweep column's keys (sweep_rows.h) and the
// row's own: gpus (a trial's, default 1), length (a trial's full length, required), at (its
// submission, default 0s), team and user. Durations as in job specs ("4h", "90m").
// "trials=200;concurrency=16;divisor=3;rungs=4;gpus=1;length=4h;at=10h;team=team-0"
StatusOr<TraceJob> ParseSweepRow(std::string_view text, std::string id);

// Adds `rows` to `jobs` (in submission order), each after the jobs submitted at the same time.
void AddRows(std::vector<TraceJob>& jobs, std::vector<TraceJob> rows);

// GPU-hours per hour of the span of the jobs' submissions (first to last): the load they offer.
double OfferedGpus(const std::vector<TraceJob>& jobs);

}  // namespace cohort::sim
