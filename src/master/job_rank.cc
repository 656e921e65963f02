#include "master/job_rank.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/units.h"
#include "scheduler/job_order.h"
#include "scheduler/runtime_history.h"

namespace cohort::master {
namespace {

// `value` with one decimal below 10 and none above, without a trailing ".0", and its unit.
std::string Amount(double value, const char* unit) {
  std::string text = value < 10 ? fmt::format("{:.1f}", value) : fmt::format("{:.0f}", value);
  if (text.ends_with(".0")) text.resize(text.size() - 2);
  return fmt::format("{} {}{}", text, unit, text == "1" ? "" : "s");
}

// The GPU time of a level: "below 1 GPU-hour", "1 to 16 GPU-hours", "16 GPU-hours and more".
std::string LevelBounds(int level, const std::vector<Duration>& thresholds) {
  size_t l = static_cast<size_t>(level);
  if (l == 0) return fmt::format("below {}", FormatGpuTime(thresholds.front()));
  if (l >= thresholds.size()) return fmt::format("{} and more", FormatGpuTime(thresholds.back()));
  // "1 to 16 GPU-hours", not "1 GPU-hour to 16 GPU-hours".
  std::string low = FormatGpuTime(thresholds[l - 1]);
  std::string high = FormatGpuTime(thresholds[l]);
  auto unit = [](const std::string& amount) {
    std::string u = amount.substr(amount.find(' ') + 1);
    if (u.ends_with('s')) u.pop_back();
    return u;
  };
  if (unit(low) == unit(high)) low.resize(low.find(' '));
  return fmt::format("{} to {}", low, high);
}

std::string DescribeEstimate(const JobRank& rank) {
  if (!rank.estimate) {
    return fmt::format("nothing to go by yet (fewer than {} jobs like it have ended)",
                       scheduler::RuntimeHistory::kMinSamples);
  }
  const RuntimeEstimate& e = *rank.estimate;
  Duration left = scheduler::ExpectedRemaining(e, rank.attained);
  std::string rest = e.gpu_time > rank.attained
                         ? fmt::format("about {} left", FormatGpuTime(left))
                         : fmt::format("it has outrun that, so as much again is expected ({})",
                                       FormatGpuTime(left));
  return fmt::format("estimated {} from {} finished job{} {}, {}", FormatGpuTime(e.gpu_time),
                     e.samples, e.samples == 1 ? "" : "s", e.basis, rest);
}

}  // namespace

std::optional<JobRank> RankOfJob(const scheduler::SchedulerConfig& config, const PendingJob& job,
                                 Timestamp now) {
  using scheduler::Policy;
  if (config.policy != Policy::kFairShare && config.policy != Policy::kLeastAttainedService) {
    return std::nullopt;
  }
  JobRank rank;
  rank.level = scheduler::LasQueue(job.attained, config.las_thresholds);
  rank.levels = static_cast<int>(config.las_thresholds.size()) + 1;
  rank.attained = job.attained;
  if (config.policy != Policy::kFairShare) return rank;
  rank.estimate = job.estimate;
  int64_t gpus = 0;
  for (const auto& t : job.tasks) gpus += t.resources.gpus;
  rank.waiting_since = job.waiting_since.value_or(job.submitted_at);
  rank.promoted_at = scheduler::PromotionTime(config, *rank.waiting_since, job.attained, gpus);
  rank.promoted = scheduler::IsPromoted(config, job, now);
  return rank;
}

std::vector<std::string> DescribeRank(const JobRank& rank, const scheduler::SchedulerConfig& config,
                                      Timestamp now) {
  std::vector<std::string> lines;
  if (rank.promoted_at && rank.waiting_since) {
    Duration waited = now - *rank.waiting_since;
    Duration after = *rank.promoted_at - *rank.waiting_since;
    lines.push_back(
        rank.promoted
            ? fmt::format("promoted: waited {} (more than {}); it goes before every job of its "
                          "team that is not promoted, whatever their level or estimate",
                          FormatDuration(waited), FormatDuration(after))
            : fmt::format("not promoted: waited {}; promoted once it has waited {}",
                          FormatDuration(waited), FormatDuration(after)));
  }
  std::string level = config.las_thresholds.empty()
                          ? std::string("one level")
                          : fmt::format("level {} of 0-{} ({})", rank.level, rank.levels - 1,
                                        LevelBounds(rank.level, config.las_thresholds));
  std::string line =
      fmt::format("{}: {} attained", level,
                  rank.attained > Duration::zero() ? FormatGpuTime(rank.attained) : "no GPU time");
  if (config.policy == scheduler::Policy::kFairShare) line += "; " + DescribeEstimate(rank);
  lines.push_back(std::move(line));
  return lines;
}

std::string FormatGpuTime(Duration d) {
  double seconds = static_cast<double>(d.count()) / 1e6;
  if (seconds >= 3600) return Amount(seconds / 3600, "GPU-hour");
  if (seconds >= 60) return Amount(seconds / 60, "GPU-minute");
  return Amount(seconds, "GPU-second");
}

}  // namespace cohort::master
