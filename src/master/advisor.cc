#include "master/advisor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace cohort::master {
namespace {

double MeanBusy(const JobSample& s) {
  double sum = 0;
  for (double b : s.gpu_busy) sum += b;
  return sum / static_cast<double>(s.gpu_busy.size());
}

double MaxBusy(const JobSample& s) {
  return *std::max_element(s.gpu_busy.begin(), s.gpu_busy.end());
}

// "4", "3.5": cores as people say them; a busy core is a whole one ("4 of 4 CPUs" at 3.9).
std::string Cores(double cores) {
  double rounded = std::round(cores * 2) / 2;
  return rounded == std::floor(rounded) ? fmt::format("{:.0f}", rounded)
                                        : fmt::format("{:.1f}", rounded);
}

std::optional<Advice> Starved(const std::vector<const JobSample*>& seen, Timestamp now,
                              const AdvisorConfig& config) {
  // The newest stretch in which every sample is starved, if it covers the window.
  double busy = 0, used = 0, requested = 0;
  size_t n = 0;
  Timestamp since = now;
  for (auto it = seen.rbegin(); it != seen.rend(); ++it) {
    const JobSample& s = **it;
    bool saturated = s.cpus_requested > 0 && s.cpus_used >= config.cpu_saturated * s.cpus_requested;
    if (MeanBusy(s) > config.gpu_starved_below || !saturated) break;
    busy += MeanBusy(s);
    used += s.cpus_used;
    requested += s.cpus_requested;
    since = s.at;
    ++n;
  }
  if (n == 0 || now - since < config.window) return std::nullopt;
  const double mean_requested = requested / static_cast<double>(n);
  return Advice{AdviceKind::kStarved,
                fmt::format("GPU {:.0f}% busy while {} of {} CPUs are saturated: ask for more "
                            "CPUs, or pack small input files into large shards",
                            100 * busy / static_cast<double>(n),
                            Cores(std::min(used / static_cast<double>(n), mean_requested)),
                            Cores(mean_requested)),
                since};
}

std::optional<Advice> Idle(const std::vector<const JobSample*>& seen, Timestamp now,
                           const AdvisorConfig& config) {
  Timestamp since = now;
  bool any = false;
  for (auto it = seen.rbegin(); it != seen.rend(); ++it) {
    if (MaxBusy(**it) > config.idle_below) break;
    since = (*it)->at;
    any = true;
  }
  if (!any || now - since < config.idle_after) return std::nullopt;
  return Advice{
      AdviceKind::kIdle,
      fmt::format("its {} GPU{} have been idle for {} minutes", seen.back()->gpu_busy.size(),
                  seen.back()->gpu_busy.size() == 1 ? "" : "s",
                  std::chrono::duration_cast<std::chrono::minutes>(now - since).count()),
      since};
}

}  // namespace

std::vector<Advice> Advise(const std::vector<JobSample>& samples, Timestamp now,
                           const AdvisorConfig& config) {
  // Samples without a GPU the advisor can see say nothing either way.
  std::vector<const JobSample*> seen;
  for (const auto& s : samples) {
    if (!s.gpu_busy.empty()) seen.push_back(&s);
  }
  std::vector<Advice> advice;
  if (seen.empty()) return advice;
  if (auto idle = Idle(seen, now, config)) {
    advice.push_back(*idle);
  } else if (auto starved = Starved(seen, now, config)) {
    advice.push_back(*starved);
  }
  return advice;
}

}  // namespace cohort::master
