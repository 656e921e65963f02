// What jobs like this one have cost before: a causal estimate of a job's total GPU time from the
// jobs that already finished with the same key (team, user, job name, GPU count), falling back to
// coarser keys when the fine one has seen too few. The default policy orders jobs of one
// least-attained-service level by it (docs/scheduler.md). A job's own run time is never visible
// before it ends: the master records a job when it ends, and the simulator rebuilds the history
// from the replay itself.
//
// Pure: no clock, no I/O. The master writes each Recorded change with the job's end (its state
// store keeps the rows) and loads the rows back at start.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/time.h"
#include "model/plan.h"
#include "model/runtime_history_rows.h"

namespace cohort::scheduler {

struct HistoryKey {
  std::string team;
  std::string user;
  std::string name;  // the job's name; empty: none
  int64_t gpus = 0;
  bool operator==(const HistoryKey&) const = default;
};

class RuntimeHistory {
 public:
  // A key is trusted once this many jobs with it have finished; coarser keys answer before.
  static constexpr int64_t kMinSamples = 3;
  // The mean forgets: once a key has this many samples, each new one weighs 1/kWindow, so the
  // estimate follows a team whose jobs change.
  static constexpr int64_t kWindow = 32;
  // Keys from the finest (team, user, name, GPUs) to the coarsest (every job).
  static constexpr int kLevels = 6;
  // The most keys kept (rows, counting every level): past it, the keys least recently changed
  // are forgotten. Jobs with names nobody uses again would otherwise grow it without end.
  static constexpr size_t kMaxKeys = 100'000;

  // `max_keys` below kLevels is taken as kLevels: one job's keys always fit.
  explicit RuntimeHistory(size_t max_keys = kMaxKeys);

  // What recording a job with `key` that ended having used `gpu_time` in all (every attempt)
  // changes, without changing anything: the master writes it first, then applies it.
  RuntimeHistoryChange Recorded(const HistoryKey& key, Duration gpu_time) const;
  // Takes a change in: its rows replace or add keys, and keys last used before its
  // forget_before go. Rows with a bad key or figures are ignored.
  void Apply(const RuntimeHistoryChange& change);
  // Recorded and applied at once.
  void Record(const HistoryKey& key, Duration gpu_time) { Apply(Recorded(key, gpu_time)); }

  // The estimate from the finest key that has seen at least kMinSamples jobs; none if even the
  // coarsest (every job) has not.
  std::optional<RuntimeEstimate> Estimate(const HistoryKey& key) const;

  // Every key, as rows for a store, by key.
  std::vector<RuntimeHistoryRow> Entries() const;
  // Replaces the contents with persisted rows (in any order). Rows with a bad key or figures are
  // ignored; past max_keys, the least recently used go.
  void Load(const std::vector<RuntimeHistoryRow>& rows);
  size_t size() const { return stats_.size(); }
  size_t max_keys() const { return max_keys_; }

 private:
  struct Stat {
    int64_t samples = 0;
    double mean_seconds = 0;
    int64_t last_used = 0;
  };
  void Put(const RuntimeHistoryRow& row);

  size_t max_keys_;
  std::unordered_map<std::string, Stat> stats_;
  std::multimap<int64_t, std::string> by_use_;  // last_used -> key, least recently used first
  int64_t next_use_ = 1;
};

// Whether two keys share their key at `level` (0 the finest .. kLevels - 1 every job, which all
// share): a job recorded under `a` changes the estimate of `b` only if they share a key at or
// below the level that answered for `b`.
bool SameAtLevel(const HistoryKey& a, const HistoryKey& b, int level);

// The expected GPU time a job still needs, given its estimate of the total and what it has had:
// the rest of the estimate, or, once it has outrun the estimate, as much again as it has had
// (heavy-tailed run times: a job that ran long will probably run longer).
Duration ExpectedRemaining(const std::optional<RuntimeEstimate>& estimate, Duration attained);

}  // namespace cohort::scheduler
