#include "state/metric_pyramid.h"

#include <gtest/gtest.h>

namespace cohort::state {
namespace {

MetricPoint At(int64_t step) { return MetricPoint{step, 1000.0 + step, static_cast<double>(step)}; }

TEST(MetricPyramid, EveryFourRowsOfALevelAreSummedUpInTheNext) {
  MetricPyramid pyramid;
  std::vector<MetricRow> stored;
  for (int64_t step = 0; step < 16; ++step) {
    auto rows = pyramid.Append(At(step));
    stored.insert(stored.end(), rows.begin(), rows.end());
  }
  EXPECT_EQ(pyramid.counts()[0], 16);
  EXPECT_EQ(pyramid.counts()[1], 4);
  EXPECT_EQ(pyramid.counts()[2], 1);
  EXPECT_EQ(pyramid.counts()[3], 0);
  ASSERT_EQ(stored.size(), 21u);
  // The 4th point closes the first summary: mean 1.5 of 0..3, min 0, max 3, the last's step.
  EXPECT_EQ(stored[4], (MetricRow{1, 0, 3, 1003, 1.5, 0, 3, 4}));
  // The 16th closes the 4th summary of level 1, then the first of level 2.
  EXPECT_EQ(stored[19], (MetricRow{1, 3, 15, 1015, 13.5, 12, 15, 4}));
  EXPECT_EQ(stored[20], (MetricRow{2, 0, 15, 1015, 7.5, 0, 15, 16}));
  EXPECT_TRUE(pyramid.pending()[0].empty());
  EXPECT_TRUE(pyramid.pending()[1].empty());
  ASSERT_EQ(pyramid.pending()[2].size(), 1u) << "waiting for 3 more to be summed up in level 3";
  EXPECT_EQ(pyramid.pending()[2][0], stored[20]);
}

TEST(MetricPyramid, ARestoredPyramidGoesOnExactlyAsTheOriginal) {
  MetricPyramid original;
  for (int64_t step = 0; step < 1234; ++step) original.Append(At(step));
  auto restored = MetricPyramid::Restore(original.counts(), original.pending());
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  for (int64_t step = 1234; step < 5000; ++step) {
    ASSERT_EQ(original.Append(At(step)), restored->Append(At(step))) << step;
  }
}

TEST(MetricPyramid, CountsAndPendingRowsThatDoNotFitAreRefused) {
  MetricPyramid pyramid;
  for (int64_t step = 0; step < 6; ++step) pyramid.Append(At(step));
  auto counts = pyramid.counts();
  auto pending = pyramid.pending();
  EXPECT_TRUE(MetricPyramid::Restore(counts, pending).ok());
  auto missing = pending;
  missing[0].pop_back();
  EXPECT_EQ(MetricPyramid::Restore(counts, missing).status().code(), StatusCode::kInvalidArgument);
  auto more = counts;
  more[0] = 10;  // 10 raw, 1 summed: 6 pending, more than a summary takes
  EXPECT_FALSE(MetricPyramid::Restore(more, pending).ok());
  auto wrong_seq = pending;
  wrong_seq[0][0].seq = 0;
  EXPECT_FALSE(MetricPyramid::Restore(counts, wrong_seq).ok());
}

TEST(MetricPyramid, AMeanWeighsEachRowByItsCount) {
  MetricRow a{1, 0, 3, 3, 2.0, 1, 3, 4};
  MetricRow b{1, 1, 4, 4, 10.0, 10, 10, 1};
  // Not a summary the pyramid makes (it sums up equal counts), but the weighting is the rule.
  MetricRow sum = Summarise({a, b}, 7);
  EXPECT_EQ(sum.count, 5);
  EXPECT_DOUBLE_EQ(sum.value, (2.0 * 4 + 10.0) / 5);
  EXPECT_EQ(sum.level, 2);
  EXPECT_EQ(sum.seq, 7);
  EXPECT_EQ(sum.step, 4);
  EXPECT_EQ(sum.min, 1);
  EXPECT_EQ(sum.max, 10);
}

TEST(MetricPyramid, TheLevelForAChartIsTheFinestWithAtMostItsPoints) {
  EXPECT_EQ(LevelFor(0, 1000), 0);
  EXPECT_EQ(LevelFor(1000, 1000), 0);
  EXPECT_EQ(LevelFor(1001, 1000), 1);
  EXPECT_EQ(LevelFor(4000, 1000), 1);
  EXPECT_EQ(LevelFor(4001, 1000), 2);
  EXPECT_EQ(LevelFor(1'000'000, 1000), 5);  // 977 rows
  EXPECT_EQ(LevelFor(int64_t{1} << 60, 1), kMetricLevels - 1);
}

}  // namespace
}  // namespace cohort::state
