// The advisor (docs/observability.md, "Advice"): what a running job's own numbers say about how
// it uses what it holds. Three findings:
//
//   - small reads: its GPUs are mostly idle while its tasks read in many small calls, the mark
//     of a loader of many small files, which packing into shards cures (docs/data.md, "Small
//     files into shards"): "GPU 12% busy while its tasks read 2.0 KiB per read call (24,000
//     calls/s): pack the small input files into large shards with `cohort data pack` and read
//     them with python/cohort_shards.py (docs/data.md)";
//   - starved: its GPUs are mostly idle while its CPUs are saturated, the mark of an input
//     pipeline that cannot keep up (too few loader workers, many small files): "GPU 12% busy
//     while 4 of 4 CPUs are saturated: ask for more CPUs, or pack small input files into large
//     shards";
//   - idle: it has held GPUs and used none of them for a while (a notebook left open, a job
//     stuck before its first step), which an admin may have the master reclaim.
//
// Pure: the caller gathers the samples (agents report them) and acts on the advice (events,
// `cohort status`, `cohort why`, reclaiming).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/time.h"

namespace cohort::master {

struct AdvisorConfig {
  // Starved: the job's GPUs at most this busy on average, while its tasks use at least
  // `cpu_saturated` of the CPUs they asked for, over at least `window` of samples.
  double gpu_starved_below = 0.5;  // fraction of the time busy
  double cpu_saturated = 0.9;      // used / requested
  Duration window = std::chrono::minutes(2);
  // Small reads: the job's GPUs at most `gpu_starved_below` busy on average while its tasks make
  // at least `small_reads_per_s` read calls a second each, of under `small_read_bytes` on
  // average, over at least `window`. A Python loader reads a 4 KiB file in two calls (2 KiB
  // each), shards in 1 MiB reads (64 KiB through tarfile); a loader of small files that starves
  // a GPU makes thousands of calls a second, a training loop that reads only now and then a few
  // (docs/observability.md, "Advice", has the measurements).
  double small_read_bytes = 16 * 1024;
  double small_reads_per_s = 1000;  // per task
  // Idle: no GPU of the job busier than `idle_below` for `idle_after`.
  double idle_below = 0.01;
  Duration idle_after = std::chrono::minutes(30);
};

// One moment of a job as its agents saw it. A GPU whose utilisation is unknown (declared fake
// GPUs) is left out of `gpu_busy`: the advisor says nothing of GPUs it cannot see.
struct JobSample {
  Timestamp at;
  std::vector<double> gpu_busy;  // per GPU the job holds: 0..1
  double cpus_used = 0;          // cores, all its tasks together
  double cpus_requested = 0;
  // What its tasks read, all of them together, and how many they are; absent unless every one
  // of them reported it (an agent may not see another account's processes).
  struct Reads {
    double bytes_per_s = 0;
    double calls_per_s = 0;
    int tasks = 0;
  };
  std::optional<Reads> reads = {};
};

enum class AdviceKind { kStarved, kIdle, kSmallReads };

struct Advice {
  AdviceKind kind;
  std::string text;  // one line, for `cohort status`, events and the dashboard
  Timestamp since;   // when the finding began to hold, as far as the samples go back
};

// One job's findings as its samples arrive: it keeps only where each finding's stretch began,
// so a job watched for hours costs a few numbers. Feed samples in time order.
class JobAdvisor {
 public:
  explicit JobAdvisor(AdvisorConfig config = {}) : config_(config) {}
  void Observe(const JobSample& sample);
  // What holds at `now`: at most one finding (idle GPUs say more than small reads, which say
  // more than saturated CPUs).
  std::vector<Advice> AdviceAt(Timestamp now) const;

 private:
  void ObserveReads(const JobSample& sample);

  AdvisorConfig config_;
  std::optional<Timestamp> idle_since_;
  size_t gpus_ = 0;
  // The starved stretch under way: when it began, and its sums for the text.
  std::optional<Timestamp> starved_since_;
  double busy_sum_ = 0, used_sum_ = 0, requested_sum_ = 0;
  int starved_samples_ = 0;
  // The small-reads stretch under way, and its sums.
  std::optional<Timestamp> small_reads_since_;
  double small_busy_sum_ = 0, read_bytes_sum_ = 0, read_calls_sum_ = 0;
  int small_reads_samples_ = 0;
};

// The findings over `samples` (oldest first) at `now`: at most one.
std::vector<Advice> Advise(const std::vector<JobSample>& samples, Timestamp now,
                           const AdvisorConfig& config = {});

}  // namespace cohort::master
