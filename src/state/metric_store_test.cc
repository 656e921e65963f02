// The SQLite metric store on a real file: what a chart reads, after restarts, within limits.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

#include "state/metric_store.h"

namespace cohort::state {
namespace {

namespace fs = std::filesystem;

class MetricStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cohort-metric-store-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }
  void Reopen(MetricLimits limits = {}) {
    store_.reset();
    auto store = OpenSqliteMetricStore((dir_ / "metrics.db").string(), limits);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  MetricAppendResult Append(const std::string& task, const std::string& tag, int64_t from,
                            int64_t to) {
    std::vector<TaggedPoint> points;
    for (int64_t step = from; step < to; ++step) {
      points.push_back(TaggedPoint{tag, MetricPoint{step, 1e9 + step, 0.5 * step}});
    }
    auto r = store_->Append(1, task, points);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : MetricAppendResult{};
  }
  MetricChart Chart(MetricQuery q) {
    q.job = q.job ? q.job : 1;
    auto chart = store_->Read(q);
    EXPECT_TRUE(chart.ok()) << chart.status().ToString();
    return chart.ok() ? *chart : MetricChart{};
  }
  std::vector<MetricLine> Read(MetricQuery q) { return Chart(std::move(q)).lines; }
  static int64_t Sum(const MetricLine& line) {
    int64_t n = 0;
    for (const auto& r : line.rows) n += r.count;
    return n;
  }

  fs::path dir_;
  std::unique_ptr<MetricStore> store_;
};

TEST_F(MetricStoreTest, AShortSeriesIsReadRawAndExactly) {
  EXPECT_EQ(Append("worker/0", "loss", 0, 100).stored, 100);
  auto lines = Read({.tag = "loss"});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].task, "worker/0");
  EXPECT_EQ(lines[0].level, 0);
  EXPECT_EQ(lines[0].points, 100);
  ASSERT_EQ(lines[0].rows.size(), 100u);
  for (int64_t step = 0; step < 100; ++step) {
    EXPECT_EQ(lines[0].rows[step].step, step);
    EXPECT_DOUBLE_EQ(lines[0].rows[step].value, 0.5 * step);
    EXPECT_DOUBLE_EQ(lines[0].rows[step].wall_time, 1e9 + step);
  }
  EXPECT_TRUE(Read({.tag = "acc"}).empty());
}

TEST_F(MetricStoreTest, ALongSeriesIsChartedFromAtMostTwiceTheAskedRowsCoveringEveryPoint) {
  const int64_t n = 100'003;
  for (int64_t from = 0; from < n; from += 10'000)
    Append("worker/0", "loss", from, std::min(n, from + 10'000));
  auto lines = Read({.tag = "loss", .max_points = 100});
  ASSERT_EQ(lines.size(), 1u);
  const MetricLine& line = lines[0];
  EXPECT_EQ(line.points, n);
  EXPECT_EQ(line.level, 5);  // 100,003 / 4^5 = 97.7 rows
  EXPECT_LE(line.rows.size(), 200u);
  EXPECT_GE(line.rows.size(), 97u);
  EXPECT_EQ(Sum(line), n) << "the level's rows and the finer levels' newest rows cover all";
  // The rows follow the steps, and each mean is that of the steps it covers (0.5 x step).
  double weighted = 0;
  for (size_t i = 1; i < line.rows.size(); ++i) {
    EXPECT_LT(line.rows[i - 1].step, line.rows[i].step);
  }
  for (const auto& r : line.rows) weighted += r.value * r.count;
  EXPECT_NEAR(weighted / n, 0.5 * (n - 1) / 2, 1e-6);
  EXPECT_EQ(line.rows.back().step, n - 1);
  EXPECT_EQ(line.rows.front().min, 0);
}

TEST_F(MetricStoreTest, AZoomedRangeIsReadFinerAndOnlyWithinIt) {
  Append("worker/0", "loss", 0, 50'000);
  auto lines = Read({.tag = "loss", .min_step = 1000, .max_step = 1099, .max_points = 1000});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].level, 0);
  ASSERT_EQ(lines[0].rows.size(), 100u);
  EXPECT_EQ(lines[0].rows.front().step, 1000);
  EXPECT_EQ(lines[0].rows.back().step, 1099);
}

TEST_F(MetricStoreTest, EveryTaskIsALineAndOneTaskCanBeAskedFor) {
  Append("worker/0", "loss", 0, 10);
  Append("worker/1", "loss", 0, 20);
  Append("worker/1", "acc", 0, 5);
  auto both = Read({.tag = "loss"});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].rows.size(), 10u);
  EXPECT_EQ(both[1].rows.size(), 20u);
  auto one = Read({.tag = "loss", .task = "worker/1"});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].task, "worker/1");
  auto series = store_->Series(1);
  ASSERT_TRUE(series.ok());
  ASSERT_EQ(series->size(), 3u);
  EXPECT_EQ((*series)[0].tag, "acc");
  EXPECT_EQ((*series)[0].points, 5);
  EXPECT_EQ((*series)[0].last_step, 4);
  EXPECT_DOUBLE_EQ((*series)[0].last_value, 2.0);
  EXPECT_EQ((*series)[2].task, "worker/1");
  EXPECT_EQ((*series)[2].first_step, 0);
}

// A chart of a tag that many tasks have is bounded over all its lines (ShareChart): the first
// kMaxChartLines tasks get a line, sharing kMaxChartPoints; a job with a few tasks gets what it
// asked for.
TEST_F(MetricStoreTest, ManyTasksShareOneChartsPointsAndTheRestAreCounted) {
  for (int t = 0; t < 4; ++t) Append(fmt::format("worker/{:03}", t), "loss", 0, 600);
  MetricChart few = Chart({.tag = "loss", .max_points = 2000});
  EXPECT_EQ(few.points_per_line, 2000u);
  EXPECT_EQ(few.lines_left_out, 0u);
  ASSERT_EQ(few.lines.size(), 4u);
  for (const auto& line : few.lines) EXPECT_EQ(line.rows.size(), 600u) << "raw, as asked";

  for (int t = 4; t < 150; ++t) Append(fmt::format("worker/{:03}", t), "loss", 0, 600);
  MetricChart many = Chart({.tag = "loss", .max_points = 2000});
  EXPECT_EQ(many.points_per_line, kMaxChartPoints / kMaxChartLines);
  EXPECT_EQ(many.lines_left_out, 150 - kMaxChartLines);
  ASSERT_EQ(many.lines.size(), kMaxChartLines);
  EXPECT_EQ(many.lines.front().task, "worker/000");  // in task order
  EXPECT_EQ(many.lines.back().task, "worker/099");
  size_t rows = 0;
  for (const auto& line : many.lines) {
    EXPECT_GT(line.level, 0) << line.task << ": read coarser than raw";
    EXPECT_LE(line.rows.size(), 2 * many.points_per_line + 33) << line.task;
    EXPECT_EQ(Sum(line), 600) << line.task << ": still covers every point";
    rows += line.rows.size();
  }
  EXPECT_LE(rows, 2 * kMaxChartPoints + 33 * kMaxChartLines);
  // A task beyond the first lines is still there when asked for by name, in full.
  MetricChart one = Chart({.tag = "loss", .task = "worker/149", .max_points = 2000});
  ASSERT_EQ(one.lines.size(), 1u);
  EXPECT_EQ(one.lines[0].rows.size(), 600u);
  EXPECT_EQ(one.lines_left_out, 0u);
}

TEST(ChartShareTest, LinesAreCappedAndShareThePoints) {
  EXPECT_EQ(ShareChart(0, 1000).lines, 0u);
  EXPECT_EQ(ShareChart(1, 1000).points_per_line, 1000u);
  EXPECT_EQ(ShareChart(1, kMaxChartPoints).points_per_line, kMaxChartPoints);
  EXPECT_EQ(ShareChart(10, 1000).points_per_line, 1000u) << "10 x 1,000 fits";
  EXPECT_EQ(ShareChart(20, 1000).points_per_line, 500u);
  EXPECT_EQ(ShareChart(1000, 1000).lines, kMaxChartLines);
  EXPECT_EQ(ShareChart(1000, 1000).points_per_line, kMaxChartPoints / kMaxChartLines);
  EXPECT_EQ(ShareChart(3, 0).points_per_line, 1u);
}

TEST_F(MetricStoreTest, SeriesGoOnAcrossRestartsAsIfNoneHappened) {
  for (int round = 0; round < 7; ++round) {
    Append("worker/0", "loss", round * 1001, (round + 1) * 1001);
    Reopen();
  }
  auto lines = Read({.tag = "loss", .max_points = 50});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].points, 7007);
  EXPECT_EQ(Sum(lines[0]), 7007);
  auto raw = Read({.tag = "loss", .max_points = 10'000});
  ASSERT_EQ(raw[0].rows.size(), 7007u);
  for (int64_t step = 0; step < 7007; ++step) ASSERT_EQ(raw[0].rows[step].step, step);
}

TEST_F(MetricStoreTest, PointsNotNewerThanTheSeriesNewestAreTakenAsRepeats) {
  Append("w/0", "loss", 0, 10);
  Reopen();
  auto again = Append("w/0", "loss", 5, 12);  // an agent that read its files again
  EXPECT_EQ(again.repeated, 5);
  EXPECT_EQ(again.stored, 2);
  // The same step again later (a job resumed from a checkpoint) is a new point.
  auto resumed = store_->Append(1, "w/0", {TaggedPoint{"loss", MetricPoint{3, 2e9, 7}}});
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ(resumed->stored, 1);
  auto lines = Read({.tag = "loss"});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].points, 13);
}

TEST_F(MetricStoreTest, PointsOverALimitAreDroppedAndSaidWhy) {
  Reopen(MetricLimits{.series_per_job = 2, .points_per_job = 25});
  EXPECT_EQ(Append("w/0", "a", 0, 10).stored, 10);
  EXPECT_EQ(Append("w/0", "b", 0, 10).stored, 10);
  auto third = Append("w/0", "c", 0, 10);
  EXPECT_EQ(third.stored, 0);
  EXPECT_EQ(third.dropped, 10);
  EXPECT_EQ(third.why_dropped, "the job has 2 series (tags times tasks), the most a job may keep");
  auto more = Append("w/0", "a", 10, 20);
  EXPECT_EQ(more.stored, 5);
  EXPECT_EQ(more.dropped, 5);
  EXPECT_EQ(more.why_dropped, "the job has 25 points, the most a job may keep");
  Reopen(MetricLimits{.series_per_job = 2, .points_per_job = 25});
  EXPECT_EQ(Append("w/0", "a", 20, 21).dropped, 1) << "the totals are read back after a restart";
  // Another job has limits of its own.
  auto other = store_->Append(2, "w/0", {TaggedPoint{"c", MetricPoint{0, 0, 1}}});
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->stored, 1);
}

TEST_F(MetricStoreTest, WhatIsNotAFiniteNumberOrHasABadNameIsDropped) {
  auto r = store_->Append(
      1, "w/0",
      {TaggedPoint{"loss", MetricPoint{0, 0, std::nan("")}},
       TaggedPoint{"loss", MetricPoint{1, 0, INFINITY}}, TaggedPoint{"", MetricPoint{2, 0, 1}},
       TaggedPoint{std::string(300, 't'), MetricPoint{3, 0, 1}},
       TaggedPoint{"loss", MetricPoint{4, 0, 1}}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stored, 1);
  EXPECT_EQ(r->dropped, 4);
  EXPECT_EQ(r->why_dropped, "tag loss: a value that is not a finite number");
  auto bad_task = store_->Append(1, "", {TaggedPoint{"loss", MetricPoint{0, 0, 1}}});
  ASSERT_TRUE(bad_task.ok());
  EXPECT_EQ(bad_task->dropped, 1);
}

TEST_F(MetricStoreTest, ANewerSchemaIsRefused) {
  store_.reset();
  {
    auto store = OpenSqliteMetricStore((dir_ / "metrics.db").string());
    ASSERT_TRUE(store.ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "metrics.db").string().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=9", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto store = OpenSqliteMetricStore((dir_ / "metrics.db").string());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(), ::testing::HasSubstr("upgrade cohortd"));
}

}  // namespace
}  // namespace cohort::state
