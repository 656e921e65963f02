// Training metrics as Cohort stores them (docs/observability.md): a series is one tag of one
// task of one job; its points are kept raw and in coarser levels, each row of level L summing
// up kMetricFanout^L consecutive raw points, so that a chart reads a bounded number of rows
// however long the series.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/job.h"

namespace cohort {

inline constexpr int kMetricFanout = 4;
// Level 11 sums up 4^11 (about 4.2 million) raw points: a series of a billion points is still
// charted from a few hundred rows.
inline constexpr int kMetricLevels = 12;

// One value of a tag at a training step, as a task reported it.
struct MetricPoint {
  int64_t step = 0;
  double wall_time = 0;  // seconds since the epoch, as the writer said
  double value = 0;
};

// One tag's value in a batch of a task's points.
struct TaggedPoint {
  std::string tag;
  MetricPoint point;
};

// What an agent ships at most in one batch (POST /api/v1/agents/{node}/metrics/{task}).
inline constexpr size_t kMaxMetricBatchPoints = 20'000;

// {"points": [{"tag": "loss", "step": 10, "time": 1700000000.5, "value": 0.31}, ...]}: the
// agent's batch, written and read by the one pair of functions. Unknown fields, a missing field
// or more than kMaxMetricBatchPoints points are errors naming the field.
std::string MetricBatchToJson(const std::vector<TaggedPoint>& points);
StatusOr<std::vector<TaggedPoint>> ParseMetricBatch(std::string_view body);

// The most points a chart may ask for per line (`max_points`), and the most that one chart
// answer carries over all its lines: a wide screen's pixels, twice.
inline constexpr size_t kMaxChartPoints = 10'000;
// The most lines (one per task) that one chart answer carries: a chart of more is unreadable,
// and each line costs its finer levels' newest rows however few points it is given.
inline constexpr size_t kMaxChartLines = 100;

// How a chart of one tag over `tasks` tasks, asked for `max_points` a line, stays bounded: the
// first kMaxChartLines tasks get a line, and they share kMaxChartPoints, each line getting the
// smaller of `max_points` and its share (so at least kMaxChartPoints / kMaxChartLines).
struct ChartShare {
  size_t lines = 0;            // how many of the tasks get a line
  size_t points_per_line = 0;  // the `max_points` each line is read with
};
ChartShare ShareChart(size_t tasks, size_t max_points);

// A stored row: a raw point (level 0, count 1), or the summary of `count` consecutive raw points
// at `level` (the mean as `value`, with their min and max; step and wall time of the last).
struct MetricRow {
  int level = 0;
  int64_t seq = 0;  // the row's index within its level, in arrival order
  int64_t step = 0;
  double wall_time = 0;
  double value = 0;
  double min = 0;
  double max = 0;
  int64_t count = 1;

  static MetricRow Raw(int64_t seq, const MetricPoint& p) {
    return MetricRow{0, seq, p.step, p.wall_time, p.value, p.value, p.value, 1};
  }
  bool operator==(const MetricRow&) const = default;
};

}  // namespace cohort
