#include "sim/generate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <random>

#include "common/strings.h"
#include "common/units.h"
#include "sim/team_split.h"

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

constexpr double kItpOneGpu = 0.832;

// 83.2% 1 GPU, 5.6% 2-4, 10.1% 5-8, 1.2% more than 8 (ITP, all clusters). With `multi`, that
// share of jobs uses more than one GPU, in ITP's proportions.
int Gpus(std::mt19937_64& rng, std::optional<double> multi) {
  double u = std::uniform_real_distribution<double>(0, 1)(rng);
  if (multi) u = u < 1 - *multi ? 0 : kItpOneGpu + (u - (1 - *multi)) / *multi * (1 - kItpOneGpu);
  auto pick = [&](std::initializer_list<int> options) {
    std::vector<int> v(options);
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  if (u < kItpOneGpu) return 1;
  if (u < 0.888) return pick({2, 4});
  if (u < 0.989) return 8;
  return pick({16, 16, 32, 64});
}

// One team's job shapes (GenerateOptions::team_shapes).
struct TeamShape {
  double duration_scale = 1;
  std::optional<double> multi_gpu_share;  // unset: ITP's
};

std::vector<TeamShape> TeamShapes(const GenerateOptions& o) {
  std::vector<TeamShape> shapes(static_cast<size_t>(std::max(o.teams, 1)));
  if (!o.team_shapes) return shapes;
  // Their own stream, so that the jobs' draws stay those of the same seed without shapes.
  std::mt19937_64 rng(o.seed ^ 0x7465'616d'7368'6170ULL);
  std::uniform_real_distribution<double> factor(std::log(0.25), std::log(4.0));
  for (auto& s : shapes) {
    s.duration_scale = std::exp(factor(rng));
    s.multi_gpu_share = std::min(0.9, (1 - kItpOneGpu) * std::exp(factor(rng)));
  }
  return shapes;
}

// Stretches the submission times so that the jobs offer `load` x `gpus` GPUs over their span.
void Pace(std::vector<TraceJob>& jobs, std::vector<double>& times, double load, int64_t gpus) {
  double gpu_seconds = 0;
  for (const auto& j : jobs) gpu_seconds += j.duration * j.gpus;
  double span = times.empty() ? 0 : times.back() - times.front();
  if (span <= 0 || load <= 0 || gpus <= 0) return;
  double factor = gpu_seconds / (load * static_cast<double>(gpus)) / span;
  for (auto& t : times) t *= factor;
}

}  // namespace

std::vector<TraceJob> GenerateTrace(const GenerateOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::exponential_distribution<double> gap(o.jobs_per_hour / 3600.0);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::vector<TeamShape> shapes = TeamShapes(o);
  std::vector<double> shares = ZipfShares(o.teams, o.team_skew);
  // Unequal teams or shapes need the team first; otherwise the draws stay in the order they had
  // before either existed, so that a seed gives the trace it always gave.
  bool team_first = o.teams > 0 && (o.team_skew > 0 || o.team_shapes);
  std::vector<TraceJob> jobs;
  std::vector<double> times;
  double t = 0;
  for (size_t i = 0; i < o.jobs; ++i) {
    TraceJob j;
    j.id = fmt::format("job-{:06}", i);
    std::optional<size_t> team;
    if (team_first) team = PickShare(shares, uniform(rng));
    const TeamShape& shape = shapes[team.value_or(0)];
    times.push_back(t);
    j.duration = std::max(1.0, std::round(Duration(uniform(rng)) * shape.duration_scale));
    j.gpus = Gpus(rng, shape.multi_gpu_share);
    if (o.teams > 0 && !team) {
      team = static_cast<size_t>(std::uniform_int_distribution<int>(0, o.teams - 1)(rng));
    }
    if (team) j.team = TeamName(*team);
    j.user = fmt::format("user-{}",
                         std::uniform_int_distribution<int>(0, std::max(o.users, 1) - 1)(rng));
    jobs.push_back(std::move(j));
    t += gap(rng);
  }
  if (o.load > 0) Pace(jobs, times, o.load, o.cluster_gpus);
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].submit = std::round(times[i]);
  return jobs;
}

double OfferedGpus(const std::vector<TraceJob>& jobs) {
  if (jobs.empty()) return 0;
  double gpu_seconds = 0, first = jobs.front().submit, last = jobs.front().submit;
  for (const auto& j : jobs) {
    gpu_seconds += j.duration * j.gpus;
    first = std::min(first, j.submit);
    last = std::max(last, j.submit);
  }
  return last > first ? gpu_seconds / (last - first) : 0;
}

StatusOr<TraceJob> ParseSweepRow(std::string_view text, std::string id) {
  TraceJob row;
  row.id = std::move(id);
  row.gpus = 1;
  std::vector<std::string> shape;  // what the sweep column reads
  bool has_length = false;
  auto seconds = [](std::string_view key, std::string_view value) -> StatusOr<double> {
    auto d = ParseDuration(value);
    if (!d.ok()) {
      return Status::InvalidArgument(fmt::format("--sweep: {}: {}", key, d.status().message()));
    }
    return static_cast<double>(d->count()) / 1e6;
  };
  for (const std::string& item : Split(text, ';')) {
    std::string_view kv = Trim(item);
    size_t eq = kv.find('=');
    std::string_view key = Trim(kv.substr(0, eq));
    std::string_view value = eq == std::string_view::npos ? "" : Trim(kv.substr(eq + 1));
    if (key == "gpus") {
      auto g = ParseInt(value, 0, 100'000);
      if (!g) return Status::InvalidArgument("--sweep: gpus must be an integer from 0 to 100000");
      row.gpus = *g;
    } else if (key == "length" || key == "at") {
      auto s = seconds(key, value);
      if (!s.ok()) return s.status();
      (key == "length" ? row.duration : row.submit) = *s;
      has_length |= key == "length";
    } else if (key == "team") {
      row.team = std::string(value);
    } else if (key == "user") {
      row.user = std::string(value);
    } else {
      shape.emplace_back(kv);
    }
  }
  if (!has_length || row.duration <= 0) {
    return Status::InvalidArgument("--sweep: length (a trial's full length, e.g. 4h) is required");
  }
  auto parsed = ParseSweepShape(fmt::format("{}", fmt::join(shape, ";")));
  if (!parsed.ok()) return Status::InvalidArgument("--" + parsed.status().message());
  row.sweep = *parsed;
  return row;
}

void AddRows(std::vector<TraceJob>& jobs, std::vector<TraceJob> rows) {
  for (auto& row : rows) {
    auto at = std::upper_bound(jobs.begin(), jobs.end(), row.submit,
                               [](double t, const TraceJob& j) { return t < j.submit; });
    jobs.insert(at, std::move(row));
  }
}

}  // namespace cohort::sim
