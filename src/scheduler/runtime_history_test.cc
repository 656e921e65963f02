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
  loaded.Load(h.Entries());
  EXPECT_EQ(loaded.Entries(), h.Entries());
  EXPECT_EQ(loaded.Estimate({"a|b", "u%", "n", 2})->gpu_time,
            h.Estimate({"a|b", "u%", "n", 2})->gpu_time);
  // Escaped: a team "a|b" never prints like team "a" with more fields after it.
  EXPECT_EQ(h.Entries().back().key, "t=a%7Cb|u=u%25|n=n|g=2");
  EXPECT_FALSE(loaded.Estimate({"a", "b", "n", 2})->basis.starts_with("named"));
  std::vector<RuntimeHistoryRow> rows = h.Entries();
  rows.push_back({"", 3, 5, 100});
  rows.push_back({"x", 0, 5, 101});
  rows.push_back({"y", 3, -1, 102});
  rows.push_back({"z", 3, std::nan(""), 103});
  rows.push_back({"w", 3, 5, 0});
  loaded.Load(rows);
  EXPECT_EQ(loaded.Entries(), h.Entries());
}

TEST(RuntimeHistory, RecordedChangesNothingUntilApplied) {
  RuntimeHistory h;
  HistoryKey k{"vision", "ada", "train", 8};
  for (int i = 0; i < 3; ++i) h.Record(k, hours(2));
  RuntimeHistoryChange change = h.Recorded(k, hours(6));
  ASSERT_EQ(change.rows.size(), static_cast<size_t>(RuntimeHistory::kLevels));
  EXPECT_EQ(change.rows[0].key, "t=vision|u=ada|n=train|g=8");
  EXPECT_EQ(change.rows[0].samples, 4);
  EXPECT_DOUBLE_EQ(change.rows[0].mean_seconds, 3 * 3600.0);
  EXPECT_EQ(change.rows.back().key, "*");
  EXPECT_EQ(change.forget_before, 0);
  EXPECT_EQ(h.Estimate(k)->gpu_time, hours(2));
  h.Apply(change);
  EXPECT_EQ(h.Estimate(k)->gpu_time, hours(3));
  EXPECT_EQ(h.Estimate(k)->level, 0);
  // Each row of a change is used later than every row before it.
  RuntimeHistoryChange next = h.Recorded(k, hours(1));
  EXPECT_GT(next.rows[0].last_used, change.rows.back().last_used);
}

TEST(RuntimeHistory, PastTheCapTheKeysLeastRecentlyChangedGo) {
  // Room for 10 keys: one job's 6, and 4 more.
  RuntimeHistory h(10);
  HistoryKey old{"vision", "ada", "old", 8};
  HistoryKey other{"vision", "bob", "other", 8};
  for (int i = 0; i < 3; ++i) h.Record(old, hours(2));
  ASSERT_EQ(h.size(), 6u);
  // Bob's job adds his three keys (name, team and name, user): 9.
  h.Record(other, hours(4));
  ASSERT_EQ(h.size(), 9u);
  // A third name by bob adds two more (his user key is there): one must go, and it is ada's
  // finest key, changed longest ago; the keys every job shares stay.
  RuntimeHistoryChange change = h.Recorded({"vision", "bob", "third", 8}, hours(1));
  EXPECT_GT(change.forget_before, 0);
  h.Apply(change);
  EXPECT_EQ(h.size(), 10u);
  std::vector<std::string> keys;
  for (const auto& row : h.Entries()) keys.push_back(row.key);
  EXPECT_THAT(keys, ::testing::Not(::testing::Contains("t=vision|u=ada|n=old|g=8")));
  EXPECT_THAT(keys, ::testing::Contains("t=vision|n=old|g=8"));
  EXPECT_THAT(keys, ::testing::Contains("*"));
  // Ada's job now answers from the team's name key, the finest left.
  EXPECT_EQ(h.Estimate(old)->basis, "named old in team vision with 8 GPUs");
  // Loading more rows than the cap keeps the most recently used.
  RuntimeHistory small(6);
  small.Load(h.Entries());
  EXPECT_EQ(small.size(), 6u);
  keys.clear();
  for (const auto& row : small.Entries()) keys.push_back(row.key);
  EXPECT_THAT(keys, ::testing::Contains("t=vision|u=bob|n=third|g=8"));
  EXPECT_THAT(keys, ::testing::Not(::testing::Contains("t=vision|n=old|g=8")));
}

TEST(RuntimeHistory, TheDefaultCapHoldsAgainstEndlesslyNewNames) {
  RuntimeHistory h;
  // Every job of its own user and name adds three keys: 40,000 of them would make 120,000.
  for (int i = 0; i < 40'000; ++i) {
    h.Record({"t", "user" + std::to_string(i), "job" + std::to_string(i), 1}, hours(1));
  }
  EXPECT_EQ(h.size(), RuntimeHistory::kMaxKeys);
  EXPECT_EQ(h.Estimate({"t", "user39999", "job39999", 1})->basis, "of team t with 1 GPU");
  EXPECT_EQ(h.Estimate({"t", "x", "y", 1})->samples, 40'000);
}

TEST(RuntimeHistory, JobsWithoutANameSayNoName) {
  RuntimeHistory h;
  for (int i = 0; i < 3; ++i) h.Record({"vision", "ada", "", 1}, hours(1));
  EXPECT_EQ(h.Estimate({"vision", "ada", "", 1})->basis,
            "of ada in team vision with 1 GPU and no name");
  EXPECT_EQ(h.Estimate({"vision", "bob", "", 1})->basis, "in team vision with 1 GPU and no name");
}

TEST(RuntimeHistory, SameAtLevel) {
  HistoryKey a{"t", "u", "n", 8};
  EXPECT_TRUE(SameAtLevel(a, a, 0));
  EXPECT_FALSE(SameAtLevel(a, {"t", "v", "n", 8}, 0));
  EXPECT_TRUE(SameAtLevel(a, {"t", "v", "n", 8}, 1));
  EXPECT_FALSE(SameAtLevel(a, {"t", "v", "n", 8}, 2));
  EXPECT_TRUE(SameAtLevel(a, {"t", "u", "m", 8}, 2));
  EXPECT_TRUE(SameAtLevel(a, {"t", "v", "m", 8}, 3));
  EXPECT_FALSE(SameAtLevel(a, {"s", "u", "n", 8}, 3));
  EXPECT_TRUE(SameAtLevel(a, {"s", "u", "n", 8}, 4));
  EXPECT_FALSE(SameAtLevel(a, {"t", "u", "n", 4}, 4));
  EXPECT_TRUE(SameAtLevel(a, {"s", "v", "m", 4}, 5));
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
