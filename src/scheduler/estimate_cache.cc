#include "scheduler/estimate_cache.h"

#include <functional>
#include <string_view>

namespace cohort::scheduler {

size_t EstimateCache::Hash::operator()(const HistoryKey& k) const {
  std::hash<std::string_view> text;
  size_t h = text(k.team);
  for (size_t part : {text(k.user), text(k.name), std::hash<int64_t>()(k.gpus)}) {
    h ^= part + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  }
  return h;
}

const std::optional<RuntimeEstimate>& EstimateCache::Get(const RuntimeHistory& history,
                                                         const HistoryKey& key) {
  if (auto it = entries_.find(key); it != entries_.end()) return it->second;
  if (entries_.size() >= max_entries_) entries_.clear();
  return entries_.emplace(key, history.Estimate(key)).first->second;
}

void EstimateCache::Forget(const HistoryKey& ended, const RuntimeHistoryChange& change) {
  if (change.forget_before > 0) {
    entries_.clear();
    return;
  }
  std::erase_if(entries_, [&](const auto& entry) {
    const auto& [key, estimate] = entry;
    int answered = estimate ? estimate->level : RuntimeHistory::kLevels - 1;
    for (int level = 0; level <= answered; ++level) {
      if (SameAtLevel(key, ended, level)) return true;
    }
    return false;
  });
}

}  // namespace cohort::scheduler
