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

// From the finest key to the coarsest, with the words `cohort why` uses for each.
struct Level {
  std::string key;
  std::string basis;
};

std::array<Level, 6> Levels(const HistoryKey& k) {
  std::string t = Escaped(k.team);
  std::string u = Escaped(k.user);
  std::string n = Escaped(k.name);
  std::string gpus = fmt::format("{} GPU{}", k.gpus, k.gpus == 1 ? "" : "s");
  return {{
      {fmt::format("t={}|u={}|n={}|g={}", t, u, n, k.gpus),
       fmt::format("named {} by {} in team {} with {}", k.name, k.user, k.team, gpus)},
      {fmt::format("t={}|n={}|g={}", t, n, k.gpus),
       fmt::format("named {} in team {} with {}", k.name, k.team, gpus)},
      {fmt::format("t={}|u={}|g={}", t, u, k.gpus),
       fmt::format("of {} in team {} with {}", k.user, k.team, gpus)},
      {fmt::format("t={}|g={}", t, k.gpus), fmt::format("of team {} with {}", k.team, gpus)},
      {fmt::format("g={}", k.gpus), fmt::format("with {}", gpus)},
      {"*", "of any kind"},
  }};
}

double SecondsOf(Duration d) { return static_cast<double>(d.count()) / 1e6; }

}  // namespace

void RuntimeHistory::Record(const HistoryKey& key, Duration gpu_time) {
  double seconds = std::max(0.0, SecondsOf(gpu_time));
  for (const Level& level : Levels(key)) {
    Stat& s = stats_[level.key];
    ++s.samples;
    s.mean_seconds +=
        (seconds - s.mean_seconds) / static_cast<double>(std::min(s.samples, kWindow));
  }
}

std::optional<RuntimeEstimate> RuntimeHistory::Estimate(const HistoryKey& key) const {
  for (const Level& level : Levels(key)) {
    auto it = stats_.find(level.key);
    if (it == stats_.end() || it->second.samples < kMinSamples) continue;
    RuntimeEstimate e;
    e.gpu_time = Duration(std::llround(it->second.mean_seconds * 1e6));
    e.samples = it->second.samples;
    e.basis = level.basis;
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
