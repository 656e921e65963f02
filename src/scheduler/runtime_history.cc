#include "scheduler/runtime_history.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace cohort::scheduler {
namespace {

// Fields may hold any text: '|' and '%' are escaped, so that two keys never print alike.
std::string Escaped(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '%') {
      out += "%25";
    } else if (c == '|') {
      out += "%7C";
    } else {
      out += c;
    }
  }
  return out;
}

// The key of `k` at `level`, from the finest to the coarsest.
std::string LevelKey(const HistoryKey& k, int level) {
  switch (level) {
    case 0:
      return fmt::format("t={}|u={}|n={}|g={}", Escaped(k.team), Escaped(k.user), Escaped(k.name),
                         k.gpus);
    case 1:
      return fmt::format("t={}|n={}|g={}", Escaped(k.team), Escaped(k.name), k.gpus);
    case 2:
      return fmt::format("t={}|u={}|g={}", Escaped(k.team), Escaped(k.user), k.gpus);
    case 3:
      return fmt::format("t={}|g={}", Escaped(k.team), k.gpus);
    case 4:
      return fmt::format("g={}", k.gpus);
    default:
      return "*";
  }
}

// The jobs behind an estimate from `level`, in the words `cohort why` uses after "jobs".
std::string Basis(const HistoryKey& k, int level) {
  std::string gpus = fmt::format("{} GPU{}", k.gpus, k.gpus == 1 ? "" : "s");
  switch (level) {
    case 0:
      return k.name.empty()
                 ? fmt::format("of {} in team {} with {} and no name", k.user, k.team, gpus)
                 : fmt::format("named {} by {} in team {} with {}", k.name, k.user, k.team, gpus);
    case 1:
      return k.name.empty() ? fmt::format("in team {} with {} and no name", k.team, gpus)
                            : fmt::format("named {} in team {} with {}", k.name, k.team, gpus);
    case 2:
      return fmt::format("of {} in team {} with {}", k.user, k.team, gpus);
    case 3:
      return fmt::format("of team {} with {}", k.team, gpus);
    case 4:
      return fmt::format("with {}", gpus);
    default:
      return "of any kind";
  }
}

double SecondsOf(Duration d) { return static_cast<double>(d.count()) / 1e6; }

bool Valid(const RuntimeHistoryRow& row) {
  return !row.key.empty() && row.samples > 0 && std::isfinite(row.mean_seconds) &&
         row.mean_seconds >= 0 && row.last_used > 0;
}

}  // namespace

RuntimeHistory::RuntimeHistory(size_t max_keys)
    : max_keys_(std::max(max_keys, static_cast<size_t>(kLevels))) {}

RuntimeHistoryChange RuntimeHistory::Recorded(const HistoryKey& key, Duration gpu_time) const {
  double seconds = std::max(0.0, SecondsOf(gpu_time));
  RuntimeHistoryChange change;
  int64_t use = next_use_;
  size_t added = 0;
  for (int level = 0; level < kLevels; ++level) {
    RuntimeHistoryRow row{LevelKey(key, level), 0, 0, use++};
    if (auto it = stats_.find(row.key); it != stats_.end()) {
      row.samples = it->second.samples;
      row.mean_seconds = it->second.mean_seconds;
    } else {
      ++added;
    }
    ++row.samples;
    row.mean_seconds +=
        (seconds - row.mean_seconds) / static_cast<double>(std::min(row.samples, kWindow));
    change.rows.push_back(std::move(row));
  }
  // Past the cap, the least recently used keys that this change leaves alone go: every key
  // last used before the first one kept.
  size_t size = stats_.size() + added;
  if (size <= max_keys_) return change;
  size_t over = size - max_keys_;
  auto touched = [&](const std::string& k) {
    return std::any_of(change.rows.begin(), change.rows.end(),
                       [&](const RuntimeHistoryRow& r) { return r.key == k; });
  };
  change.forget_before = next_use_;  // if every untouched key goes
  for (const auto& [last_used, k] : by_use_) {
    if (touched(k)) continue;
    if (over == 0) {
      change.forget_before = last_used;
      break;
    }
    --over;
  }
  return change;
}

void RuntimeHistory::Put(const RuntimeHistoryRow& row) {
  if (!Valid(row)) return;
  auto [it, inserted] = stats_.try_emplace(row.key);
  if (!inserted) {
    auto [first, last] = by_use_.equal_range(it->second.last_used);
    for (auto u = first; u != last; ++u) {
      if (u->second == row.key) {
        by_use_.erase(u);
        break;
      }
    }
  }
  it->second = Stat{row.samples, row.mean_seconds, row.last_used};
  by_use_.emplace(row.last_used, row.key);
  next_use_ = std::max(next_use_, row.last_used + 1);
}

void RuntimeHistory::Apply(const RuntimeHistoryChange& change) {
  for (const auto& row : change.rows) Put(row);
  while (!by_use_.empty() && by_use_.begin()->first < change.forget_before) {
    stats_.erase(by_use_.begin()->second);
    by_use_.erase(by_use_.begin());
  }
}

std::optional<RuntimeEstimate> RuntimeHistory::Estimate(const HistoryKey& key) const {
  for (int level = 0; level < kLevels; ++level) {
    auto it = stats_.find(LevelKey(key, level));
    if (it == stats_.end() || it->second.samples < kMinSamples) continue;
    RuntimeEstimate e;
    e.gpu_time = Duration(std::llround(it->second.mean_seconds * 1e6));
    e.samples = it->second.samples;
    e.basis = Basis(key, level);
    e.level = level;
    return e;
  }
  return std::nullopt;
}

std::vector<RuntimeHistoryRow> RuntimeHistory::Entries() const {
  std::vector<RuntimeHistoryRow> out;
  out.reserve(stats_.size());
  for (const auto& [key, s] : stats_) {
    out.push_back(RuntimeHistoryRow{key, s.samples, s.mean_seconds, s.last_used});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

void RuntimeHistory::Load(const std::vector<RuntimeHistoryRow>& rows) {
  stats_.clear();
  by_use_.clear();
  next_use_ = 1;
  for (const auto& row : rows) Put(row);
  while (stats_.size() > max_keys_) {
    stats_.erase(by_use_.begin()->second);
    by_use_.erase(by_use_.begin());
  }
}

bool SameAtLevel(const HistoryKey& a, const HistoryKey& b, int level) {
  switch (level) {
    case 0:
      return a == b;
    case 1:
      return a.team == b.team && a.name == b.name && a.gpus == b.gpus;
    case 2:
      return a.team == b.team && a.user == b.user && a.gpus == b.gpus;
    case 3:
      return a.team == b.team && a.gpus == b.gpus;
    case 4:
      return a.gpus == b.gpus;
    default:
      return true;
  }
}

Duration ExpectedRemaining(const std::optional<RuntimeEstimate>& estimate, Duration attained) {
  if (!estimate) return Duration::max();
  if (estimate->gpu_time > attained) return estimate->gpu_time - attained;
  return std::max(attained, Duration(1));
}

}  // namespace cohort::scheduler
