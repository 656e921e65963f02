// What jobs like this one have cost before: a causal estimate of a job's total GPU time from the
// jobs that already finished with the same key (team, user, job name, GPU count), falling back to
// coarser keys when the fine one has seen too few. The default policy orders jobs of one
// least-attained-service level by it (docs/scheduler.md). A job's own run time is never visible
// before it ends: the master records a job when it ends, and the simulator rebuilds the history
// from the replay itself.
//
// Pure: no clock, no I/O. The master persists Entries() and loads them back at start.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/time.h"
#include "model/plan.h"

namespace cohort::scheduler {

struct HistoryKey {
  std::string team;
  std::string user;
  std::string name;  // the job's name; empty: none
  int64_t gpus = 0;
};

class RuntimeHistory {
 public:
  // A key is trusted once this many jobs with it have finished; coarser keys answer before.
  static constexpr int64_t kMinSamples = 3;
  // The mean forgets: once a key has this many samples, each new one weighs 1/kWindow, so the
  // estimate follows a team whose jobs change.
  static constexpr int64_t kWindow = 32;

  // A job with `key` ended having used `gpu_time` in all (every attempt).
  void Record(const HistoryKey& key, Duration gpu_time);
  // The estimate from the finest key that has seen at least kMinSamples jobs; none if even the
  // coarsest (every job) has not.
  std::optional<RuntimeEstimate> Estimate(const HistoryKey& key) const;

  // What is persisted: one row per key at every level.
  struct Entry {
    std::string key;  // as Level keys print it, e.g. "t=vision|g=8"
    int64_t samples = 0;
    double mean_seconds = 0;
  };
  std::vector<Entry> Entries() const;
  // Replaces an entry (loading persisted rows). Rows with a bad key or figures are ignored.
  void Load(const Entry& entry);
  size_t size() const { return stats_.size(); }

 private:
  struct Stat {
    int64_t samples = 0;
    double mean_seconds = 0;
  };
  std::unordered_map<std::string, Stat> stats_;
};

// The expected GPU time a job still needs, given its estimate of the total and what it has had:
// the rest of the estimate, or, once it has outrun the estimate, as much again as it has had
// (heavy-tailed run times: a job that ran long will probably run longer).
Duration ExpectedRemaining(const std::optional<RuntimeEstimate>& estimate, Duration attained);

}  // namespace cohort::scheduler
