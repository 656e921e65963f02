#include "state/metric_pyramid.h"

#include <fmt/format.h>

#include <algorithm>

namespace cohort::state {

MetricRow Summarise(const std::vector<MetricRow>& rows, int64_t seq) {
  MetricRow sum;
  sum.level = rows.front().level + 1;
  sum.seq = seq;
  sum.count = 0;
  sum.min = rows.front().min;
  sum.max = rows.front().max;
  double total = 0;
  for (const MetricRow& r : rows) {
    total += r.value * static_cast<double>(r.count);
    sum.count += r.count;
    sum.min = std::min(sum.min, r.min);
    sum.max = std::max(sum.max, r.max);
  }
  sum.value = total / static_cast<double>(sum.count);
  sum.step = rows.back().step;
  sum.wall_time = rows.back().wall_time;
  return sum;
}

StatusOr<MetricPyramid> MetricPyramid::Restore(const Counts& counts, Pending pending) {
  for (int level = 0; level < kMetricLevels; ++level) {
    const int64_t summed = level + 1 < kMetricLevels ? kMetricFanout * counts[level + 1] : 0;
    const int64_t expected = level + 1 < kMetricLevels ? counts[level] - summed : 0;
    if (counts[level] < 0 || expected < 0 || expected >= kMetricFanout ||
        static_cast<int64_t>(pending[level].size()) != expected) {
      return Status::InvalidArgument(fmt::format(
          "metric level {}: {} rows, {} summed up above, {} pending: the levels do not fit", level,
          counts[level], summed, pending[level].size()));
    }
    for (size_t i = 0; i < pending[level].size(); ++i) {
      const MetricRow& row = pending[level][i];
      if (row.level != level || row.seq != summed + static_cast<int64_t>(i)) {
        return Status::InvalidArgument(
            fmt::format("metric level {}: pending row {} has level {} and seq {}", level, i,
                        row.level, row.seq));
      }
    }
  }
  MetricPyramid pyramid;
  pyramid.counts_ = counts;
  pyramid.pending_ = std::move(pending);
  return pyramid;
}

std::vector<MetricRow> MetricPyramid::Append(const MetricPoint& point) {
  std::vector<MetricRow> rows{MetricRow::Raw(counts_[0]++, point)};
  // The top level keeps every row: nothing sums it up.
  if (kMetricLevels > 1) pending_[0].push_back(rows.back());
  for (int level = 0; level + 1 < kMetricLevels; ++level) {
    if (pending_[level].size() < static_cast<size_t>(kMetricFanout)) break;
    MetricRow sum = Summarise(pending_[level], counts_[level + 1]++);
    pending_[level].clear();
    if (level + 2 < kMetricLevels) pending_[level + 1].push_back(sum);
    rows.push_back(sum);
  }
  return rows;
}

int LevelFor(int64_t rows_in_range, size_t max_points) {
  const int64_t wanted = std::max<int64_t>(1, static_cast<int64_t>(max_points));
  int level = 0;
  int64_t rows = rows_in_range;
  while (rows > wanted && level + 1 < kMetricLevels) {
    rows = (rows + kMetricFanout - 1) / kMetricFanout;
    ++level;
  }
  return level;
}

}  // namespace cohort::state
