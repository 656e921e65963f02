#include "common/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace cohort {
namespace {

TEST(Histogram, CountsEachObservationInTheFirstBucketThatHoldsIt) {
  Histogram h({0.001, 0.01, 0.1});
  h.Observe(std::chrono::microseconds(500));  // 0.0005
  h.Observe(std::chrono::milliseconds(1));    // on a bound: that bucket (le is inclusive)
  h.Observe(std::chrono::milliseconds(50));
  h.Observe(std::chrono::seconds(3));  // above every bound: only +Inf, i.e. count()
  EXPECT_EQ(h.CumulativeCounts(), (std::vector<uint64_t>{2, 2, 3}));
  EXPECT_EQ(h.count(), 4u);
  EXPECT_DOUBLE_EQ(h.sum(), 0.0005 + 0.001 + 0.05 + 3);
}

TEST(Histogram, ANegativeDurationCountsAsZero) {
  Histogram h({0.001});
  h.Observe(std::chrono::milliseconds(-5));
  EXPECT_EQ(h.CumulativeCounts(), (std::vector<uint64_t>{1}));
  EXPECT_EQ(h.sum(), 0);
}

TEST(Histogram, LatencyBucketsSpanATenthOfAMillisecondToTenSeconds) {
  Histogram h;
  ASSERT_FALSE(h.bounds().empty());
  EXPECT_DOUBLE_EQ(h.bounds().front(), 0.0001);
  EXPECT_DOUBLE_EQ(h.bounds().back(), 10);
  EXPECT_TRUE(std::is_sorted(h.bounds().begin(), h.bounds().end()));
  EXPECT_EQ(std::adjacent_find(h.bounds().begin(), h.bounds().end()), h.bounds().end());
}

}  // namespace
}  // namespace cohort
