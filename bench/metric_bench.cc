// What training metrics cost the master's metric store (docs/observability.md, "From the task to
// the chart"): appending a tag of 1,000,000 points in agent-sized batches, then reading it as a
// chart asks (the whole series, and zoomed ranges) with the store's own downsampling. Prints a
// table; docs/performance.md records this machine's figures.
//
//   build/bin/metric_bench [--points 1000000] [--batch 1000] [--runs 9] [--dir /tmp]
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "state/metric_store.h"

namespace {

using namespace cohort;
namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;

double Ms(Steady::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times the metric store: appends, and chart reads of a long series"};
  int64_t points = 1'000'000;
  size_t batch = 1000;
  int runs = 9;
  std::string dir = fs::temp_directory_path().string();
  app.add_option("--points", points, "Points in the series");
  app.add_option("--batch", batch, "Points per append (an agent's batch)");
  app.add_option("--runs", runs, "Runs of each read; the median is printed");
  app.add_option("--dir", dir, "Where the database file goes");
  CLI11_PARSE(app, argc, argv);

  fs::path path = fs::path(dir) / fmt::format("cohort-metric-bench-{}.db", ::getpid());
  fs::remove(path);
  auto store = state::OpenSqliteMetricStore(path.string(), state::MetricLimits{});
  if (!store.ok()) {
    fmt::print(stderr, "metric_bench: {}\n", store.status().ToString());
    return 1;
  }
  auto start = Steady::now();
  std::vector<TaggedPoint> chunk;
  for (int64_t step = 0; step < points; step += static_cast<int64_t>(batch)) {
    chunk.clear();
    for (int64_t s = step; s < std::min(points, step + static_cast<int64_t>(batch)); ++s) {
      chunk.push_back(TaggedPoint{"loss", MetricPoint{s, 1.7e9 + s * 0.1, 1.0 / (1.0 + s)}});
    }
    auto r = (*store)->Append(1, "worker/0", chunk);
    if (!r.ok()) {
      fmt::print(stderr, "metric_bench: {}\n", r.status().ToString());
      return 1;
    }
  }
  double append_ms = Ms(Steady::now() - start);
  double bytes = 0;
  for (const char* suffix : {"", "-wal"}) {
    std::error_code ec;
    auto size = fs::file_size(path.string() + suffix, ec);
    if (!ec) bytes += static_cast<double>(size);
  }
  fmt::print(
      "appended {} points in batches of {}: {:.0f} ms ({:.1f} µs a point); files {:.1f} MB "
      "({:.0f} bytes a point)\n",
      points, batch, append_ms, 1000 * append_ms / static_cast<double>(points), bytes / 1e6,
      bytes / static_cast<double>(points));

  struct Case {
    std::string what;
    state::MetricQuery query;
  };
  const int64_t mid = points / 2;
  std::vector<Case> cases = {
      {"whole series, 1,000 rows", {1, "loss", "", std::nullopt, std::nullopt, 1000}},
      {"whole series, 10,000 rows", {1, "loss", "", std::nullopt, std::nullopt, 10'000}},
      {"a tenth, 1,000 rows", {1, "loss", "", mid, mid + points / 10, 1000}},
      {"1,000 steps, raw", {1, "loss", "", mid, mid + 999, 1000}},
  };
  fmt::print("\n| chart read | level | rows | ms (median of {}) |\n|---|---|---|---|\n", runs);
  for (const auto& c : cases) {
    std::vector<double> times;
    state::MetricLine line;
    for (int i = 0; i < runs; ++i) {
      auto t = Steady::now();
      auto chart = (*store)->Read(c.query);
      times.push_back(Ms(Steady::now() - t));
      if (!chart.ok() || chart->lines.size() != 1) {
        fmt::print(stderr, "metric_bench: read failed\n");
        return 1;
      }
      line = chart->lines[0];
    }
    fmt::print("| {} | {} | {} | {:.2f} |\n", c.what, line.level, line.rows.size(), Median(times));
  }
  store->reset();
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix);
  return 0;
}
