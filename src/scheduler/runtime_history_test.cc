#include "scheduler/runtime_history.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cohort::scheduler {
namespace {

using std::chrono::hours;
using ::testing::HasSubstr;

Duration Hours(double h) { return Duration(static_cast<int64_t>(h * 3600e6)); }

TEST(RuntimeHistory, NothingToGoByBeforeThreeJobsHaveEnded) {
  RuntimeHistory h;
  HistoryKey k{"vision", "ada", "train", 8};
  EXPECT_FALSE(h.Estimate(k).has_value());
  h.Record(k, hours(1));
  h.Record(k, hours(2));
  EXPECT_FALSE(h.Estimate(k).has_value());
  h.Record(k, hours(3));
  auto e = h.Estimate(k);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->gpu_time, hours(2));
  EXPECT_EQ(e->samples, 3);
  EXPECT_EQ(e->basis, "named train by ada in team vision with 8 GPUs");
}

TEST(RuntimeHistory, FallsBackToCoarserKeys) {
  RuntimeHistory h;
  for (int i = 0; i < 3; ++i) h.Record({"vision", "ada", "train", 8}, hours(10));
  for (int i = 0; i < 3; ++i) h.Record({"vision", "bob", "eval", 8}, hours(4));
  // Bob's "train" with 8 GPUs: no job of his had that name; the team's "train" jobs did.
  auto e = h.Estimate({"vision", "bob", "train", 8});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->gpu_time, hours(10));
  EXPECT_EQ(e->basis, "named train in team vision with 8 GPUs");
  // Bob, a new name: his own 8-GPU jobs.
  e = h.Estimate({"vision", "bob", "new", 8});
  EXPECT_EQ(e->gpu_time, hours(4));
  EXPECT_THAT(e->basis, HasSubstr("of bob in team vision"));
  // Someone new in the team: the team's 8-GPU jobs, all six.
  e = h.Estimate({"vision", "cy", "x", 8});
  EXPECT_EQ(e->gpu_time, hours(7));
  EXPECT_EQ(e->samples, 6);
  EXPECT_EQ(e->basis, "of team vision with 8 GPUs");
  // Another team with 8 GPUs: every 8-GPU job; with 1 GPU: every job.
  EXPECT_EQ(h.Estimate({"nlp", "x", "y", 8})->basis, "with 8 GPUs");
  EXPECT_EQ(h.Estimate({"nlp", "x", "y", 1})->basis, "of any kind");
}

TEST(RuntimeHistory, FollowsChangeOnceTheWindowIsFull) {
  RuntimeHistory h;
  HistoryKey k{"t", "u", "n", 1};
  for (int i = 0; i < 1000; ++i) h.Record(k, hours(1));
  for (int i = 0; i < 100; ++i) h.Record(k, hours(10));
  // A plain mean of all 1,100 would say 1.8 hours; the window forgets the old jobs.
  EXPECT_GT(h.Estimate(k)->gpu_time, Hours(9.5));
}

TEST(RuntimeHistory, EntriesRoundTripAndBadRowsAreIgnored) {
  RuntimeHistory h;
  for (int i = 1; i <= 4; ++i) h.Record({"a|b", "u%", "n", 2}, hours(i));
  RuntimeHistory loaded;
  for (const auto& e : h.Entries()) loaded.Load(e);
  EXPECT_EQ(loaded.size(), h.size());
  EXPECT_EQ(loaded.Estimate({"a|b", "u%", "n", 2})->gpu_time,
            h.Estimate({"a|b", "u%", "n", 2})->gpu_time);
  // Escaped: a team "a|b" never prints like team "a" with more fields after it.
  EXPECT_EQ(h.Entries().back().key, "t=a%7Cb|u=u%25|n=n|g=2");
  EXPECT_FALSE(loaded.Estimate({"a", "b", "n", 2})->basis.starts_with("named"));
  loaded.Load({"", 3, 5});
  loaded.Load({"x", 0, 5});
  loaded.Load({"y", 3, -1});
  loaded.Load({"z", 3, std::nan("")});
  EXPECT_EQ(loaded.size(), h.size());
}

TEST(RuntimeHistory, ExpectedRemaining) {
  RuntimeEstimate e{hours(10), 5, "b"};
  EXPECT_EQ(ExpectedRemaining(e, hours(4)), hours(6));
  // Past the estimate: as much again as it has had.
  EXPECT_EQ(ExpectedRemaining(e, hours(12)), hours(12));
  EXPECT_EQ(ExpectedRemaining(std::nullopt, hours(1)), Duration::max());
}

}  // namespace
}  // namespace cohort::scheduler
