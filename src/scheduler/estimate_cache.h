// Each key's estimate (RuntimeHistory::Estimate), kept until a job ends that could change it. The
// master asks for the estimate of every pending job on every full pass, 100,000 jobs of far fewer
// keys, and Estimate formats up to six keys and a sentence per call.
#pragma once

#include <cstddef>
#include <optional>
#include <unordered_map>

#include "model/plan.h"
#include "scheduler/runtime_history.h"

namespace cohort::scheduler {

class EstimateCache {
 public:
  // The most keys kept; one more empties the cache (the keys a pass asks for come back).
  static constexpr size_t kMaxEntries = 100'000;

  explicit EstimateCache(size_t max_entries = kMaxEntries) : max_entries_(max_entries) {}

  // The estimate `history` gives for `key`, from the cache unless Forget dropped it since.
  // The reference is valid until the next call.
  const std::optional<RuntimeEstimate>& Get(const RuntimeHistory& history, const HistoryKey& key);
  // `change`, recording a job with key `ended`, was applied to the history: drops every
  // estimate it could have changed, those of keys that share a key with `ended` at or below the
  // level that answered (at any level, for a key with no estimate yet); all of them if it forgot
  // keys (past RuntimeHistory::max_keys), as an estimate may have come from one of those.
  void Forget(const HistoryKey& ended, const RuntimeHistoryChange& change);
  void Clear() { entries_.clear(); }
  size_t size() const { return entries_.size(); }

 private:
  struct Hash {
    size_t operator()(const HistoryKey& k) const;
  };
  size_t max_entries_;
  std::unordered_map<HistoryKey, std::optional<RuntimeEstimate>, Hash> entries_;
};

}  // namespace cohort::scheduler
