#include "sim/generate.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <random>

namespace cohort::sim {
namespace {

// Duration quantiles (fraction, seconds): median, p90 and p99 are the ITP figures; the ends are
// chosen to match the traces' range. Log-linear in between.
constexpr std::array<std::pair<double, double>, 7> kDurationQuantiles = {{
    {0.0, 60},
    {0.25, 2'400},
    {0.5, 10'537},
    {0.9, 28'787},
    {0.99, 209'979},
    {0.999, 600'000},
    {1.0, 1'500'000},
}};

double Duration(double u) {
  for (size_t i = 1; i < kDurationQuantiles.size(); ++i) {
    auto [q0, d0] = kDurationQuantiles[i - 1];
    auto [q1, d1] = kDurationQuantiles[i];
    if (u <= q1) {
      double t = (u - q0) / (q1 - q0);
      return std::exp(std::log(d0) + t * (std::log(d1) - std::log(d0)));
    }
  }
  return kDurationQuantiles.back().second;
}

// 83.2% 1 GPU, 5.6% 2-4, 10.1% 5-8, 1.2% more than 8 (ITP, all clusters).
int Gpus(std::mt19937_64& rng) {
  double u = std::uniform_real_distribution<double>(0, 1)(rng);
  auto pick = [&](std::initializer_list<int> options) {
    std::vector<int> v(options);
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  if (u < 0.832) return 1;
  if (u < 0.888) return pick({2, 4});
  if (u < 0.989) return 8;
  return pick({16, 16, 32, 64});
}

}  // namespace

std::vector<TraceJob> GenerateTrace(const GenerateOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::exponential_distribution<double> gap(o.jobs_per_hour / 3600.0);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::vector<TraceJob> jobs;
  double t = 0;
  for (size_t i = 0; i < o.jobs; ++i) {
    TraceJob j;
    j.id = fmt::format("job-{:06}", i);
    j.submit = std::round(t);
    j.duration = std::round(Duration(uniform(rng)));
    j.gpus = Gpus(rng);
    if (o.teams > 0)
      j.team = fmt::format("team-{}", std::uniform_int_distribution<int>(0, o.teams - 1)(rng));
    j.user = fmt::format("user-{}",
                         std::uniform_int_distribution<int>(0, std::max(o.users, 1) - 1)(rng));
    jobs.push_back(std::move(j));
    t += gap(rng);
  }
  return jobs;
}

}  // namespace cohort::sim
