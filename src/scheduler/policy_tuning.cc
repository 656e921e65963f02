#include "scheduler/policy_tuning.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <optional>

#include "common/units.h"

namespace cohort::scheduler {
namespace {

StatusOr<Duration> PositiveDuration(const std::string& flag, const std::string& text) {
  auto d = ParseDuration(text);
  if (!d.ok()) return Status::InvalidArgument(fmt::format("{}: {}", flag, d.status().message()));
  if (*d <= Duration{}) {
    return Status::InvalidArgument(fmt::format("{}: must be longer than 0, got {}", flag, text));
  }
  return *d;
}

// ParseDuration takes no negative durations.
StatusOr<Duration> NonNegativeDuration(const std::string& flag, const std::string& text) {
  auto d = ParseDuration(text);
  if (!d.ok()) return Status::InvalidArgument(fmt::format("{}: {}", flag, d.status().message()));
  return *d;
}

StatusOr<double> NonNegative(const std::string& flag, const std::string& text) {
  double f = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, f);
  if (ec != std::errc() || ptr != end || !std::isfinite(f) || f < 0 || f > 1e6) {
    return Status::InvalidArgument(
        fmt::format("{}: expected a number from 0 to 1000000, got \"{}\"", flag, text));
  }
  return f;
}

}  // namespace

Status ApplyTuning(const PolicyTuning& t, SchedulerConfig& config) {
  if (!t.levels.empty()) {
    std::vector<Duration> levels;
    if (t.levels != "none") {
      size_t start = 0;
      while (start <= t.levels.size()) {
        size_t comma = t.levels.find(',', start);
        if (comma == std::string::npos) comma = t.levels.size();
        auto d = PositiveDuration("--levels", t.levels.substr(start, comma - start));
        if (!d.ok()) return d.status();
        if (!levels.empty() && *d <= levels.back()) {
          return Status::InvalidArgument(fmt::format(
              "--levels: thresholds must grow from left to right, got \"{}\"", t.levels));
        }
        levels.push_back(*d);
        start = comma + 1;
      }
    }
    config.las_thresholds = std::move(levels);
  }
  if (!t.promote_after.empty()) {
    auto d = PositiveDuration("--promote-after", t.promote_after);
    if (!d.ok()) return d.status();
    config.promote_after = *d;
  }
  if (!t.promote_factor.empty()) {
    auto f = NonNegative("--promote-factor", t.promote_factor);
    if (!f.ok()) return f.status();
    config.promote_factor = *f;
  }
  if (!t.min_victim_level.empty()) {
    auto n = NonNegative("--min-victim-level", t.min_victim_level);
    if (!n.ok()) return n.status();
    config.min_victim_level = static_cast<int>(*n);
  }
  if (!t.level_preemption_delay.empty()) {
    auto d = NonNegativeDuration("--level-preemption-delay", t.level_preemption_delay);
    if (!d.ok()) return d.status();
    config.level_preemption_delay = *d;
  }
  if (!t.move_after.empty()) {
    if (t.move_after == "off") {
      config.move_after.reset();
    } else {
      auto d = NonNegativeDuration("--move-after", t.move_after);
      if (!d.ok()) return d.status();
      config.move_after = *d;
    }
  }
  if (!t.max_wait.empty()) {
    auto d = PositiveDuration("--max-wait", t.max_wait);
    if (!d.ok()) return d.status();
    config.max_wait = *d;
  }
  if (!t.protected_quantum.empty()) {
    auto d = PositiveDuration("--protected-quantum", t.protected_quantum);
    if (!d.ok()) return d.status();
    config.protected_quantum = *d;
  }
  return Status::Ok();
}

StatusOr<SchedulerConfig> ConfigFor(std::string_view policy) {
  std::string_view base = policy;
  std::optional<bool> backfill;
  for (std::string_view suffix : {"+backfill", "-backfill"}) {
    if (base.size() > suffix.size() && base.ends_with(suffix)) {
      backfill = suffix[0] == '+';
      base.remove_suffix(suffix.size());
    }
  }
  auto parsed = ParsePolicy(base);
  if (!parsed.ok()) {
    return Status::InvalidArgument(fmt::format(
        "\"{}\" is not a policy; use fifo, fifo+backfill, las, default, or the references "
        "sjf-oracle and srtf-oracle (each may end in +backfill or -backfill)",
        policy));
  }
  SchedulerConfig config;
  config.policy = *parsed;
  config.backfill = backfill.value_or(*parsed != Policy::kFifo);
  return config;
}

}  // namespace cohort::scheduler
