// Figures of a simulation run (docs/simulator.md): completion times, queueing delays, makespan,
// GPU utilisation, preemptions, per-team shares; as a table, CSV and JSON; plus one CSV row per
// job so that anyone can recompute every figure.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/json.h"
#include "sim/simulator.h"

namespace cohort::sim {

struct TeamFigures {
  std::string team;
  int64_t guaranteed_gpus = 0;
  double quota_share = 0;     // guaranteed / cluster GPUs
  double received_share = 0;  // its GPU-time / the cluster's GPU-time over the makespan
  double avg_queueing_delay = 0;
  double max_guaranteed_wait = 0;  // JobRecord::guaranteed_wait, the longest (seconds)
  size_t jobs = 0;
};

// A sweep row's figures, and what it did to the others: the waits of the trace's own jobs
// submitted while it ran (from its submission to its last trial's end, or the replay's end).
struct SweepFigures {
  SweepRecord sweep;
  size_t others = 0;
  double others_median_wait = 0, others_p95_wait = 0;  // seconds
};

// The job figures (jobs to guaranteed waits, preemptions per job) are over the trace's own jobs:
// a sweep's trials are in its row (`sweeps`). The cluster's (makespan, utilization, GPU time
// used and lost, node failures) count trials too.
struct Figures {
  std::string label;
  size_t jobs = 0;
  size_t trials = 0;  // of every sweep
  size_t finished = 0;
  size_t failed = 0;   // ended FAILED: stopped by max_runtime, or out of restart attempts
  size_t refused = 0;  // could never run on this cluster
  // Jobs that never completed their work: refused, failed, or still waiting or running when the
  // replay ended (jobs - finished).
  size_t unfinished = 0;
  double avg_jct = 0, median_jct = 0, p95_jct = 0, p99_jct = 0;  // seconds
  double avg_queueing = 0, p99_queueing = 0;                     // seconds
  double median_queueing = 0, p95_queueing = 0;
  // JobRecord::guaranteed_wait over the jobs that had one: the longest, and the 99th percentile.
  double max_guaranteed_wait = 0, p99_guaranteed_wait = 0;
  double makespan = 0;     // first submit to last end
  double utilization = 0;  // allocated GPU-time / (capacity x makespan)
  double preemptions_per_job = 0;
  double used_gpu_seconds = 0;  // allocated GPU-time: the integral of GPUs held
  double lost_gpu_seconds = 0;  // wasted by preemptions (JobRecord::lost_gpu_seconds, summed)
  double lost_share = 0;        // lost / used
  // Node failures (SimOptions::node_mtbf_seconds), apart from preemptions' figures: how often a
  // node failed, the jobs that lost an attempt to one, and the GPU time that cost them.
  bool node_failures_simulated = false;
  size_t node_failures = 0;
  size_t jobs_hit_by_failures = 0;
  double failure_lost_gpu_seconds = 0;  // JobRecord::failure_lost_gpu_seconds, summed
  double failure_lost_share = 0;        // of used
  size_t passes = 0;
  double wall_seconds = 0;
  std::vector<TeamFigures> teams;
  std::vector<SweepFigures> sweeps;
};

Figures Summarize(const SimResult& result);

// One line per run: the comparison table printed by `cohort sim run`.
std::string FiguresTable(const std::vector<Figures>& runs);
std::string FiguresCsv(const std::vector<Figures>& runs);
Json FiguresJson(const std::vector<Figures>& runs);
std::string TeamsTable(const std::vector<Figures>& runs);
// One line per sweep and run: its trials, makespan and GPU time, beside the median and p95 wait
// of the jobs submitted while it ran; empty when no run has a sweep.
std::string SweepsTable(const std::vector<Figures>& runs);
// job_id,team,user,gpus,submit,start,end,queued,attempts,preemptions,failed,lost_gpu_seconds,
// node_failures,failure_lost_gpu_seconds,guaranteed_wait, and with sweeps ,sweep,rung
std::string JobsCsv(const SimResult& result);

// The value at quantile q (0..1) of `values` (nearest rank); 0 for none.
double Quantile(std::vector<double> values, double q);

}  // namespace cohort::sim
