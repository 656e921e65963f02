#include "sim/team_quotas.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace cohort::sim {

std::vector<TraceTeam> TeamsOfTrace(const Trace& trace) {
  std::map<std::string, TraceTeam> teams;
  for (const auto& j : trace.jobs) {
    std::string name = j.team.empty() ? "default" : j.team;
    TraceTeam& t = teams[name];
    t.name = name;
    int gpus = j.min_gpus > 0 ? j.min_gpus : j.gpus;
    if (j.sweep) {
      // Its trials, each as long as the rungs make it on average.
      t.jobs += static_cast<size_t>(j.sweep->trials);
      t.gpu_seconds += j.sweep->trials * ExpectedTrialLength(*j.sweep, j.duration) * gpus;
      continue;
    }
    ++t.jobs;
    t.gpu_seconds += j.duration * gpus;
  }
  std::vector<TraceTeam> out;
  out.reserve(teams.size());
  for (auto& [name, t] : teams) out.push_back(std::move(t));
  return out;
}

std::vector<int64_t> LargestRemainder(const std::vector<double>& weights, int64_t total) {
  std::vector<int64_t> parts(weights.size(), 0);
  if (weights.empty() || total <= 0) return parts;
  double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<double> w = weights;
  if (sum <= 0) {
    std::fill(w.begin(), w.end(), 1.0);
    sum = static_cast<double>(w.size());
  }
  std::vector<double> remainder(w.size());
  int64_t given = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    double exact = static_cast<double>(total) * std::max(0.0, w[i]) / sum;
    parts[i] = static_cast<int64_t>(std::floor(exact));
    remainder[i] = exact - static_cast<double>(parts[i]);
    given += parts[i];
  }
  std::vector<size_t> order(w.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return remainder[a] > remainder[b]; });
  // The floors sum to at most `total`: fewer than one GPU per part is left over (round off may
  // leave one more, which goes round again).
  for (size_t k = 0; given < total; k = (k + 1) % order.size(), ++given) ++parts[order[k]];
  return parts;
}

std::vector<TeamQuota> QuotasByGpuHours(const std::vector<TraceTeam>& teams, int64_t gpus) {
  std::vector<double> weights;
  for (const auto& t : teams) weights.push_back(t.gpu_seconds);
  std::vector<int64_t> parts = LargestRemainder(weights, gpus);
  if (gpus >= static_cast<int64_t>(teams.size())) {
    for (auto& p : parts) {
      if (p > 0) continue;
      ++p;
      --*std::max_element(parts.begin(), parts.end());
    }
  }
  std::vector<TeamQuota> quotas;
  for (size_t i = 0; i < teams.size(); ++i) {
    quotas.push_back(TeamQuota{teams[i].name, parts[i], std::nullopt});
  }
  return quotas;
}

}  // namespace cohort::sim
