#include <fmt/format.h>
#include <sqlite3.h>

#include <cmath>
#include <map>
#include <mutex>
#include <tuple>

#include "common/strings.h"
#include "state/metric_pyramid.h"
#include "state/metric_store.h"
#include "state/sqlite_db.h"

namespace cohort::state {
namespace {

constexpr int kSchemaVersion = 1;
constexpr const char* kSchema = R"sql(
  CREATE TABLE metric_series (
    id INTEGER PRIMARY KEY,
    job INTEGER NOT NULL,
    task TEXT NOT NULL,
    tag TEXT NOT NULL,
    counts TEXT NOT NULL,           -- rows per level, "n0,n1,...": the pyramid's shape
    first_step INTEGER NOT NULL,
    last_step INTEGER NOT NULL,
    last_value REAL NOT NULL,
    last_wall_time REAL NOT NULL,
    UNIQUE (job, tag, task)
  );
  CREATE TABLE metric_rows (
    series INTEGER NOT NULL,
    level INTEGER NOT NULL,         -- 0: a raw point; L: the summary of 4^L raw points
    seq INTEGER NOT NULL,           -- the row's index within its level
    step INTEGER NOT NULL,
    wall_time REAL NOT NULL,
    value REAL NOT NULL,
    min REAL NOT NULL,
    max REAL NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (series, level, seq)
  ) WITHOUT ROWID;
  CREATE INDEX metric_rows_by_step ON metric_rows(series, level, step);
)sql";

// The writer keeps the pyramids of the series it wrote lately; beyond this many it forgets them
// all (each is rebuilt from a few rows when next written).
constexpr size_t kCachedSeries = 20'000;

std::string EncodeCounts(const MetricPyramid::Counts& counts) {
  std::string text;
  for (int64_t c : counts) {
    if (!text.empty()) text += ',';
    text += std::to_string(c);
  }
  return text;
}

StatusOr<MetricPyramid::Counts> DecodeCounts(const std::string& text) {
  MetricPyramid::Counts counts{};
  auto parts = Split(text, ',');
  if (parts.size() != counts.size()) {
    return Status::Internal(
        fmt::format("metric series counts \"{}\": not {} numbers", text, counts.size()));
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    auto n = ParseInteger(parts[i], 0, std::numeric_limits<int64_t>::max());
    if (!n) return Status::Internal(fmt::format("metric series counts \"{}\": bad number", text));
    counts[i] = *n;
  }
  return counts;
}

MetricRow ReadRow(Statement& q) {
  MetricRow row;
  row.level = static_cast<int>(q.Int(0));
  row.seq = q.Int(1);
  row.step = q.Int(2);
  row.wall_time = q.Double(3);
  row.value = q.Double(4);
  row.min = q.Double(5);
  row.max = q.Double(6);
  row.count = q.Int(7);
  return row;
}

constexpr const char* kRowColumns = "level, seq, step, wall_time, value, min, max, count";

class SqliteMetricStore final : public MetricStore {
 public:
  SqliteMetricStore(sqlite3* writer, sqlite3* reader, std::string path, MetricLimits limits)
      : writer_{writer, path, "the metric database"},
        reader_{reader, path, "the metric database"},
        limits_(limits) {}
  ~SqliteMetricStore() override {
    sqlite3_close(writer_.db);
    sqlite3_close(reader_.db);
  }

  Status Init() {
    // NORMAL: a commit survives a crash of the master, and the last few may be lost to a power
    // cut, which costs a few seconds of a curve, not a job.
    COHORT_RETURN_IF_ERROR(SqliteExec(writer_, "PRAGMA synchronous=NORMAL", "setting up"));
    Statement v(writer_.db, "PRAGMA user_version");
    if (!v.prepared() || v.Step() != SQLITE_ROW) {
      return SqliteError(writer_, "reading the schema version");
    }
    int version = static_cast<int>(v.Int(0));
    if (version > kSchemaVersion) {
      return Status::FailedPrecondition(fmt::format(
          "{}: schema version {} is newer than this cohortd knows ({}); upgrade cohortd",
          writer_.path, version, kSchemaVersion));
    }
    if (version == 0) {
      COHORT_RETURN_IF_ERROR(SqliteExec(writer_, "BEGIN IMMEDIATE", "creating the schema"));
      Status s = SqliteExec(writer_, kSchema, "creating the schema");
      if (s.ok()) s = SqliteExec(writer_, "PRAGMA user_version=1", "creating the schema");
      if (s.ok()) s = SqliteExec(writer_, "COMMIT", "creating the schema");
      COHORT_RETURN_IF_ERROR(SqliteRollBackIfFailed(writer_, std::move(s)));
    }
    return Status::Ok();
  }

  StatusOr<MetricAppendResult> Append(JobId job, const std::string& task,
                                      const std::vector<TaggedPoint>& points) override {
    std::lock_guard lock(write_mu_);
    MetricAppendResult result;
    auto drop = [&](std::string why) {
      ++result.dropped;
      if (result.why_dropped.empty()) result.why_dropped = std::move(why);
    };
    if (task.empty() || task.size() > limits_.task_bytes) {
      result.dropped = static_cast<int64_t>(points.size());
      result.why_dropped =
          fmt::format("task name: empty or longer than {} bytes", limits_.task_bytes);
      return result;
    }
    if (cache_.size() > kCachedSeries) {
      cache_.clear();
      jobs_.clear();
    }
    COHORT_RETURN_IF_ERROR(SqliteExec(writer_, "BEGIN IMMEDIATE", "storing metrics"));
    std::vector<Key> touched;
    Status s = [&]() -> Status {
      COHORT_ASSIGN_OR_RETURN(JobTotals * totals, TotalsOf(job));
      for (const TaggedPoint& p : points) {
        if (p.tag.empty() || p.tag.size() > limits_.tag_bytes) {
          drop(fmt::format("a tag is empty or longer than {} bytes", limits_.tag_bytes));
          continue;
        }
        if (!std::isfinite(p.point.value) || !std::isfinite(p.point.wall_time)) {
          drop(fmt::format("tag {}: a value that is not a finite number", p.tag));
          continue;
        }
        if (totals->points >= limits_.points_per_job) {
          drop(fmt::format("the job has {} points, the most a job may keep",
                           limits_.points_per_job));
          continue;
        }
        Key key{job, p.tag, task};
        COHORT_ASSIGN_OR_RETURN(OpenSeries * series, SeriesFor(key, *totals));
        if (series == nullptr) {
          drop(fmt::format("the job has {} series (tags times tasks), the most a job may keep",
                           limits_.series_per_job));
          continue;
        }
        if (series->pyramid.counts()[0] > 0 &&
            std::tie(p.point.wall_time, p.point.step) <=
                std::tie(series->last_wall_time, series->last_step)) {
          ++result.repeated;
          continue;
        }
        if (!series->dirty) touched.push_back(key);
        COHORT_RETURN_IF_ERROR(Store(*series, p.point));
        ++totals->points;
        ++result.stored;
      }
      for (const Key& key : touched) COHORT_RETURN_IF_ERROR(SaveSeries(cache_.at(key)));
      return SqliteExec(writer_, "COMMIT", "storing metrics");
    }();
    if (!s.ok()) {
      // Memory ran ahead of what was rolled back: forget it, to be read again.
      for (const Key& key : touched) cache_.erase(key);
      jobs_.erase(job);
      return SqliteRollBackIfFailed(writer_, std::move(s));
    }
    for (const Key& key : touched) cache_.at(key).dirty = false;
    return result;
  }

  StatusOr<std::vector<MetricSeriesInfo>> Series(JobId job) override {
    std::lock_guard lock(read_mu_);
    Statement q(reader_.db,
                "SELECT task, tag, counts, first_step, last_step, last_value, last_wall_time "
                "FROM metric_series WHERE job = ? ORDER BY tag, task");
    if (!q.prepared()) return SqliteError(reader_, "preparing the series query");
    q.Bind(1, job);
    std::vector<MetricSeriesInfo> series;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      MetricSeriesInfo info;
      info.task = q.Text(0);
      info.tag = q.Text(1);
      COHORT_ASSIGN_OR_RETURN(auto counts, DecodeCounts(q.Text(2)));
      info.points = counts[0];
      info.first_step = q.Int(3);
      info.last_step = q.Int(4);
      info.last_value = q.Double(5);
      info.last_wall_time = q.Double(6);
      series.push_back(std::move(info));
    }
    if (rc != SQLITE_DONE) return SqliteError(reader_, "reading series");
    return series;
  }

  StatusOr<MetricChart> Read(const MetricQuery& query) override {
    std::lock_guard lock(read_mu_);
    // One snapshot: a series' counts and its rows as one write left them.
    COHORT_RETURN_IF_ERROR(SqliteExec(reader_, "BEGIN", "reading metrics"));
    auto lines = ReadLines(query);
    Status end = SqliteExec(reader_, "COMMIT", "reading metrics");
    if (!lines.ok()) return lines.status();
    COHORT_RETURN_IF_ERROR(end);
    return lines;
  }

 private:
  using Key = std::tuple<JobId, std::string, std::string>;  // job, tag, task
  struct OpenSeries {
    int64_t id = 0;
    MetricPyramid pyramid;
    int64_t first_step = 0;
    int64_t last_step = 0;
    double last_value = 0;
    double last_wall_time = 0;
    bool dirty = false;  // changed in the open transaction
  };
  struct JobTotals {
    size_t series = 0;
    int64_t points = 0;
  };

  StatusOr<JobTotals*> TotalsOf(JobId job) {
    if (auto it = jobs_.find(job); it != jobs_.end()) return &it->second;
    Statement q(writer_.db, "SELECT counts FROM metric_series WHERE job = ?");
    if (!q.prepared()) return SqliteError(writer_, "preparing the job's series query");
    q.Bind(1, job);
    JobTotals totals;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      COHORT_ASSIGN_OR_RETURN(auto counts, DecodeCounts(q.Text(0)));
      ++totals.series;
      totals.points += counts[0];
    }
    if (rc != SQLITE_DONE) return SqliteError(writer_, "reading the job's series");
    return &jobs_.emplace(job, totals).first->second;
  }

  // The series, read or created; nullptr when the job may have no more series.
  StatusOr<OpenSeries*> SeriesFor(const Key& key, JobTotals& totals) {
    if (auto it = cache_.find(key); it != cache_.end()) return &it->second;
    const auto& [job, tag, task] = key;
    Statement q(writer_.db,
                "SELECT id, counts, first_step, last_step, last_value, last_wall_time "
                "FROM metric_series WHERE job = ? AND tag = ? AND task = ?");
    if (!q.prepared()) return SqliteError(writer_, "preparing a series lookup");
    q.Bind(1, job);
    q.Bind(2, tag);
    q.Bind(3, task);
    OpenSeries series;
    int rc = q.Step();
    if (rc == SQLITE_ROW) {
      series.id = q.Int(0);
      COHORT_ASSIGN_OR_RETURN(auto counts, DecodeCounts(q.Text(1)));
      series.first_step = q.Int(2);
      series.last_step = q.Int(3);
      series.last_value = q.Double(4);
      series.last_wall_time = q.Double(5);
      COHORT_ASSIGN_OR_RETURN(series.pyramid, RestorePyramid(series.id, counts));
    } else if (rc == SQLITE_DONE) {
      if (totals.series >= limits_.series_per_job) return nullptr;
      Statement insert(writer_.db,
                       "INSERT INTO metric_series (job, task, tag, counts, first_step, last_step, "
                       "last_value, last_wall_time) VALUES (?, ?, ?, ?, 0, 0, 0, 0)");
      if (!insert.prepared()) return SqliteError(writer_, "preparing a series insert");
      insert.Bind(1, job);
      insert.Bind(2, task);
      insert.Bind(3, tag);
      insert.Bind(4, EncodeCounts(MetricPyramid::Counts{}));
      if (insert.Step() != SQLITE_DONE) return SqliteError(writer_, "adding a series");
      series.id = sqlite3_last_insert_rowid(writer_.db);
      ++totals.series;
    } else {
      return SqliteError(writer_, "looking up a series");
    }
    return &cache_.emplace(key, std::move(series)).first->second;
  }

  StatusOr<MetricPyramid> RestorePyramid(int64_t id, const MetricPyramid::Counts& counts) {
    MetricPyramid::Pending pending;
    for (int level = 0; level + 1 < kMetricLevels; ++level) {
      COHORT_ASSIGN_OR_RETURN(pending[level],
                              RowsFrom(writer_, id, level, kMetricFanout * counts[level + 1]));
    }
    auto pyramid = MetricPyramid::Restore(counts, std::move(pending));
    if (!pyramid.ok()) {
      return Status::Internal(
          fmt::format("{}: series {}: {}", writer_.path, id, pyramid.status().message()));
    }
    return pyramid;
  }

  // The rows of a level from `seq` on, in seq order: the few a level above does not sum up.
  StatusOr<std::vector<MetricRow>> RowsFrom(const SqliteFile& file, int64_t series, int level,
                                            int64_t seq) {
    Statement q(file.db, fmt::format("SELECT {} FROM metric_rows WHERE series = ? AND level = ? "
                                     "AND seq >= ? ORDER BY seq",
                                     kRowColumns)
                             .c_str());
    if (!q.prepared()) return SqliteError(file, "preparing a row query");
    q.Bind(1, series);
    q.Bind(2, int64_t{level});
    q.Bind(3, seq);
    std::vector<MetricRow> rows;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) rows.push_back(ReadRow(q));
    if (rc != SQLITE_DONE) return SqliteError(file, "reading rows");
    return rows;
  }

  Status Store(OpenSeries& series, const MetricPoint& point) {
    Statement insert(writer_.db,
                     "INSERT INTO metric_rows (series, level, seq, step, wall_time, value, min, "
                     "max, count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!insert.prepared()) return SqliteError(writer_, "preparing a row insert");
    for (const MetricRow& row : series.pyramid.Append(point)) {
      insert.Reset();
      insert.Bind(1, series.id);
      insert.Bind(2, int64_t{row.level});
      insert.Bind(3, row.seq);
      insert.Bind(4, row.step);
      insert.BindDouble(5, row.wall_time);
      insert.BindDouble(6, row.value);
      insert.BindDouble(7, row.min);
      insert.BindDouble(8, row.max);
      insert.Bind(9, row.count);
      if (insert.Step() != SQLITE_DONE) return SqliteError(writer_, "storing a metric row");
    }
    if (series.pyramid.counts()[0] == 1) series.first_step = point.step;
    series.last_step = point.step;
    series.last_value = point.value;
    series.last_wall_time = point.wall_time;
    series.dirty = true;
    return Status::Ok();
  }

  Status SaveSeries(const OpenSeries& series) {
    Statement update(writer_.db,
                     "UPDATE metric_series SET counts = ?, first_step = ?, last_step = ?, "
                     "last_value = ?, last_wall_time = ? WHERE id = ?");
    if (!update.prepared()) return SqliteError(writer_, "preparing a series update");
    update.Bind(1, EncodeCounts(series.pyramid.counts()));
    update.Bind(2, series.first_step);
    update.Bind(3, series.last_step);
    update.BindDouble(4, series.last_value);
    update.BindDouble(5, series.last_wall_time);
    update.Bind(6, series.id);
    if (update.Step() != SQLITE_DONE) return SqliteError(writer_, "saving a series");
    return Status::Ok();
  }

  StatusOr<MetricChart> ReadLines(const MetricQuery& query) {
    Statement q(reader_.db, query.task.empty()
                                ? "SELECT id, task, counts, first_step, last_step FROM "
                                  "metric_series WHERE job = ? AND tag = ? ORDER BY task"
                                : "SELECT id, task, counts, first_step, last_step FROM "
                                  "metric_series WHERE job = ? AND tag = ? AND task = ?");
    if (!q.prepared()) return SqliteError(reader_, "preparing the series query");
    q.Bind(1, query.job);
    q.Bind(2, query.tag);
    if (!query.task.empty()) q.Bind(3, query.task);
    // Every series of the tag first (at most MetricLimits::series_per_job): how many there are
    // decides how many get a line and how many rows each line gets.
    struct Found {
      int64_t id;
      std::string task;
      MetricPyramid::Counts counts;
      int64_t first_step;
      int64_t last_step;
    };
    std::vector<Found> found;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      COHORT_ASSIGN_OR_RETURN(auto counts, DecodeCounts(q.Text(2)));
      found.push_back(Found{q.Int(0), q.Text(1), counts, q.Int(3), q.Int(4)});
    }
    if (rc != SQLITE_DONE) return SqliteError(reader_, "reading series");
    const ChartShare share = ShareChart(found.size(), query.max_points);
    MetricChart chart;
    chart.points_per_line = share.points_per_line;
    chart.lines_left_out = found.size() - share.lines;
    for (size_t i = 0; i < share.lines; ++i) {
      const Found& f = found[i];
      MetricLine line;
      line.task = f.task;
      line.points = f.counts[0];
      COHORT_RETURN_IF_ERROR(
          ReadLine(query, share.points_per_line, f.id, f.counts, f.first_step, f.last_step, line));
      chart.lines.push_back(std::move(line));
    }
    return chart;
  }

  Status ReadLine(const MetricQuery& query, size_t points, int64_t id,
                  const MetricPyramid::Counts& counts, int64_t first_step, int64_t last_step,
                  MetricLine& line) {
    const int64_t lo = query.min_step.value_or(std::numeric_limits<int64_t>::min());
    const int64_t hi = query.max_step.value_or(std::numeric_limits<int64_t>::max());
    // How many raw points the range holds, if steps are spread evenly: the level to start at.
    double in_range = static_cast<double>(counts[0]);
    if (last_step > first_step && (query.min_step || query.max_step)) {
      double from = static_cast<double>(std::max(lo, first_step));
      double to = static_cast<double>(std::min(hi, last_step));
      in_range *= std::max(0.0, to - from + 1) / static_cast<double>(last_step - first_step + 1);
    }
    const size_t max_points = std::max<size_t>(1, points);
    const int64_t cap = 2 * static_cast<int64_t>(max_points);
    int level = LevelFor(static_cast<int64_t>(std::ceil(in_range)), max_points);
    Statement q(reader_.db, fmt::format("SELECT {} FROM metric_rows WHERE series = ? AND "
                                        "level = ? AND step >= ? AND step <= ? "
                                        "ORDER BY step, seq LIMIT ?",
                                        kRowColumns)
                                .c_str());
    if (!q.prepared()) return SqliteError(reader_, "preparing a row query");
    // Steps that are not spread evenly can put more rows in the range than estimated: then a
    // coarser level.
    for (;; ++level) {
      line.rows.clear();
      q.Reset();
      q.Bind(1, id);
      q.Bind(2, int64_t{level});
      q.Bind(3, lo);
      q.Bind(4, hi);
      q.Bind(5, cap + 1);
      int rc;
      while ((rc = q.Step()) == SQLITE_ROW) line.rows.push_back(ReadRow(q));
      if (rc != SQLITE_DONE) return SqliteError(reader_, "reading rows");
      if (static_cast<int64_t>(line.rows.size()) <= cap || level + 1 == kMetricLevels) break;
    }
    line.level = level;
    // The newest points are in no row of this level yet: the finer levels' unsummed rows.
    for (int finer = level - 1; finer >= 0; --finer) {
      COHORT_ASSIGN_OR_RETURN(auto rows,
                              RowsFrom(reader_, id, finer, kMetricFanout * counts[finer + 1]));
      for (MetricRow& row : rows) {
        if (row.step >= lo && row.step <= hi) line.rows.push_back(std::move(row));
      }
    }
    return Status::Ok();
  }

  SqliteFile writer_;
  SqliteFile reader_;
  MetricLimits limits_;
  std::mutex write_mu_;
  std::mutex read_mu_;
  std::map<Key, OpenSeries> cache_;
  std::map<JobId, JobTotals> jobs_;
};

}  // namespace

StatusOr<std::unique_ptr<MetricStore>> OpenSqliteMetricStore(const std::string& path,
                                                             MetricLimits limits) {
  COHORT_ASSIGN_OR_RETURN(sqlite3 * writer, SqliteOpenWal(path));
  auto reader = SqliteOpenWal(path);
  if (!reader.ok()) {
    sqlite3_close(writer);
    return reader.status();
  }
  auto store = std::make_unique<SqliteMetricStore>(writer, *reader, path, limits);
  COHORT_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<MetricStore>(std::move(store));
}

}  // namespace cohort::state
