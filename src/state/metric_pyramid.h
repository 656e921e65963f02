// The levels of one metric series (model/metric.h), as far as the writer needs them: how many
// rows each level has, and the rows of each level that the level above does not sum up yet
// (fewer than kMetricFanout). Everything follows from the stored rows, so it is rebuilt after a
// restart from the counts and those few pending rows. Pure: no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "model/metric.h"

namespace cohort::state {

class MetricPyramid {
 public:
  using Counts = std::array<int64_t, kMetricLevels>;
  using Pending = std::array<std::vector<MetricRow>, kMetricLevels>;

  MetricPyramid() = default;
  // From what is stored: each level's row count, and its pending rows (the last
  // counts[L] - kMetricFanout * counts[L + 1] rows of level L, in seq order). kInvalidArgument
  // when they do not fit together.
  static StatusOr<MetricPyramid> Restore(const Counts& counts, Pending pending);

  // Adds the next raw point: the rows to store, the raw one first, then every summary it
  // completes, level by level.
  std::vector<MetricRow> Append(const MetricPoint& point);

  const Counts& counts() const { return counts_; }
  const Pending& pending() const { return pending_; }

 private:
  Counts counts_{};
  Pending pending_;
};

// Sums up consecutive rows of one level into one row of the next: the mean weighted by count,
// the min and max, and the last row's step and wall time.
MetricRow Summarise(const std::vector<MetricRow>& rows, int64_t seq);

// The level to read for a chart of about `max_points` points over `rows_in_range` raw points:
// the finest level with at most that many rows there.
int LevelFor(int64_t rows_in_range, size_t max_points);

}  // namespace cohort::state
