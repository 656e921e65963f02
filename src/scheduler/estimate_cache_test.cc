#include "scheduler/estimate_cache.h"

#include <gtest/gtest.h>

namespace cohort::scheduler {
namespace {

using std::chrono::hours;

// Records a job in the history and tells the cache, as the master does once the write is done.
void Ended(RuntimeHistory& history, EstimateCache& cache, const HistoryKey& key, Duration d) {
  RuntimeHistoryChange change = history.Recorded(key, d);
  history.Apply(change);
  cache.Forget(key, change);
}

TEST(EstimateCache, KeepsAnEstimateUntilAJobLikeItEnds) {
  RuntimeHistory history;
  EstimateCache cache;
  HistoryKey ada{"vision", "ada", "train", 8};
  for (int i = 0; i < 3; ++i) Ended(history, cache, ada, hours(2));
  EXPECT_EQ(cache.Get(history, ada)->gpu_time, hours(2));
  // Changed behind its back: the cache still answers what it had...
  history.Record(ada, hours(6));
  EXPECT_EQ(cache.Get(history, ada)->gpu_time, hours(2));
  // ...until it is told that a job like it ended.
  Ended(history, cache, ada, hours(8));
  EXPECT_EQ(cache.Get(history, ada)->gpu_time, history.Estimate(ada)->gpu_time);
  EXPECT_EQ(cache.Get(history, ada)->gpu_time, hours(4));
}

TEST(EstimateCache, AnEndDropsOnlyTheEstimatesItCouldChange) {
  RuntimeHistory history;
  EstimateCache cache;
  HistoryKey ada{"vision", "ada", "train", 8};
  HistoryKey bob{"nlp", "bob", "bert", 8};
  HistoryKey cy{"nlp", "cy", "new", 1};  // nothing like it: every job answers
  for (int i = 0; i < 3; ++i) Ended(history, cache, ada, hours(2));
  for (int i = 0; i < 3; ++i) Ended(history, cache, bob, hours(5));
  EXPECT_EQ(cache.Get(history, ada)->level, 0);
  EXPECT_EQ(cache.Get(history, bob)->level, 0);
  EXPECT_EQ(cache.Get(history, cy)->level, 5);
  ASSERT_EQ(cache.size(), 3u);
  // Ada's end changes her key and every coarser one, which bob's estimate does not come from;
  // cy's comes from the key of every job.
  Ended(history, cache, ada, hours(2));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.Get(history, bob)->gpu_time, hours(5));
  EXPECT_EQ(cache.Get(history, cy)->samples, 7);
}

TEST(EstimateCache, KeysWithNothingToGoByAreDroppedByAnyEnd) {
  RuntimeHistory history;
  EstimateCache cache;
  HistoryKey ada{"vision", "ada", "train", 8};
  HistoryKey bob{"nlp", "bob", "bert", 1};
  EXPECT_FALSE(cache.Get(history, bob).has_value());
  for (int i = 0; i < 3; ++i) Ended(history, cache, ada, hours(2));
  ASSERT_TRUE(cache.Get(history, bob).has_value());
  EXPECT_EQ(cache.Get(history, bob)->basis, "of any kind");
}

TEST(EstimateCache, ForgottenKeysDropEverything) {
  RuntimeHistory history(8);
  EstimateCache cache;
  HistoryKey ada{"vision", "ada", "train", 8};
  HistoryKey bob{"nlp", "bob", "bert", 8};
  for (int i = 0; i < 3; ++i) Ended(history, cache, ada, hours(2));
  ASSERT_EQ(cache.Get(history, ada)->level, 0);
  // Bob's keys push ada's finest ones out of the history; her estimate came from one of them.
  RuntimeHistoryChange change = history.Recorded(bob, hours(1));
  ASSERT_GT(change.forget_before, 0);
  history.Apply(change);
  cache.Forget(bob, change);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.Get(history, ada), history.Estimate(ada));
  EXPECT_GT(cache.Get(history, ada)->level, 0);
}

TEST(EstimateCache, IsBounded) {
  RuntimeHistory history;
  EstimateCache cache(4);
  for (int i = 0; i < 10; ++i) {
    cache.Get(history, {"t", "u", "job" + std::to_string(i), 1});
    EXPECT_LE(cache.size(), 4u);
  }
  EXPECT_GE(cache.size(), 1u);
}

}  // namespace
}  // namespace cohort::scheduler
