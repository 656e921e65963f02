#include "scheduler/runtime_history.h"

#include <fmt/format.h>

#include <algorithm>
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

// Keys from the finest (level 0) to the coarsest (kLevels - 1), each made only when asked for:
// an estimate usually stops at the first.
constexpr int kLevels = 6;

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

// The words `cohort why` uses for a level.
std::string LevelBasis(const HistoryKey& k, int level) {
  std::string gpus = fmt::format("{} GPU{}", k.gpus, k.gpus == 1 ? "" : "s");
  switch (level) {
    case 0:
      return fmt::format("named {} by {} in team {} with {}", k.name, k.user, k.team, gpus);
    case 1:
      return fmt::format("named {} in team {} with {}", k.name, k.team, gpus);
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

}  // namespace

void RuntimeHistory::Record(const HistoryKey& key, Duration gpu_time) {
  double seconds = std::max(0.0, SecondsOf(gpu_time));
  for (int level = 0; level < kLevels; ++level) {
    Stat& s = stats_[LevelKey(key, level)];
    ++s.samples;
    s.mean_seconds +=
        (seconds - s.mean_seconds) / static_cast<double>(std::min(s.samples, kWindow));
  }
}

std::optional<RuntimeEstimate> RuntimeHistory::Estimate(const HistoryKey& key) const {
  for (int level = 0; level < kLevels; ++level) {
    auto it = stats_.find(LevelKey(key, level));
    if (it == stats_.end() || it->second.samples < kMinSamples) continue;
    RuntimeEstimate e;
    e.gpu_time = Duration(std::llround(it->second.mean_seconds * 1e6));
    e.samples = it->second.samples;
    e.basis = LevelBasis(key, level);
    return e;
  }
  return std::nullopt;
}

std::vector<RuntimeHistory::Entry> RuntimeHistory::Entries() const {
  std::vector<Entry> out;
  out.reserve(stats_.size());
  for (const auto& [key, s] : stats_) out.push_back(Entry{key, s.samples, s.mean_seconds});
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });
  return out;
}

void RuntimeHistory::Load(const Entry& entry) {
  if (entry.key.empty() || entry.samples <= 0 || !std::isfinite(entry.mean_seconds) ||
      entry.mean_seconds < 0) {
    return;
  }
  stats_[entry.key] = Stat{entry.samples, entry.mean_seconds};
}

Duration ExpectedRemaining(const std::optional<RuntimeEstimate>& estimate, Duration attained) {
  if (!estimate) return Duration::max();
  if (estimate->gpu_time > attained) return estimate->gpu_time - attained;
  return std::max(attained, Duration(1));
}

}  // namespace cohort::scheduler
