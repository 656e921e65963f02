// Where training metrics are kept (docs/observability.md): a database of its own beside the
// state database, since metrics come in volume and need not survive a power cut the way an
// acknowledged job must. Each series (job, task, tag) is stored raw and in coarser levels
// (model/metric.h), so that a chart reads at most a few times `max_points` rows however many
// points the series holds.
//
// Thread-safe: the master appends from one thread and reads from another.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/metric.h"

namespace cohort::state {

struct MetricLimits {
  size_t series_per_job = 1000;         // tags times tasks
  int64_t points_per_job = 20'000'000;  // raw points, all series together
  size_t tag_bytes = 256;
  size_t task_bytes = 128;
};

using cohort::TaggedPoint;

struct MetricAppendResult {
  int64_t stored = 0;
  // Points not newer than the series' newest (by wall time, then step): taken as ones stored
  // before, sent again by an agent that read its files again after a restart.
  int64_t repeated = 0;
  int64_t dropped = 0;      // over a limit of MetricLimits
  std::string why_dropped;  // the first limit hit, for the job's events
};

struct MetricSeriesInfo {
  std::string task;
  std::string tag;
  int64_t points = 0;
  int64_t first_step = 0;
  int64_t last_step = 0;
  double last_value = 0;
  double last_wall_time = 0;
};

struct MetricQuery {
  JobId job = 0;
  std::string tag = {};
  std::string task = {};  // empty: every task that has the tag (at most kMaxChartLines of them)
  std::optional<int64_t> min_step = {};
  std::optional<int64_t> max_step = {};
  size_t max_points = 1000;  // per line, shared when many tasks have the tag (ShareChart)
};

// One task's line of a chart: rows of one level, then the newest rows of finer levels that the
// level does not sum up yet; ordered by step.
struct MetricLine {
  std::string task;
  int level = 0;
  int64_t points = 0;  // raw points in the series
  std::vector<MetricRow> rows;
};

// One tag's chart: a line per task, in task order, bounded over all lines (ShareChart).
struct MetricChart {
  std::vector<MetricLine> lines;
  size_t points_per_line = 0;  // the max_points each line was read with
  size_t lines_left_out = 0;   // tasks with the tag beyond the first kMaxChartLines
};

class MetricStore {
 public:
  virtual ~MetricStore() = default;
  // Adds a task's points, in order, to their series. Points over a limit are dropped and
  // counted, not refused: a job's metrics never stop its training. An error only when nothing
  // could be written (kResourceExhausted: the disk is full).
  virtual StatusOr<MetricAppendResult> Append(JobId job, const std::string& task,
                                              const std::vector<TaggedPoint>& points) = 0;
  virtual StatusOr<std::vector<MetricSeriesInfo>> Series(JobId job) = 0;
  virtual StatusOr<MetricChart> Read(const MetricQuery& query) = 0;
};

StatusOr<std::unique_ptr<MetricStore>> OpenSqliteMetricStore(const std::string& path,
                                                             MetricLimits limits = {});

}  // namespace cohort::state
