// The levels stage on its own (levels.h): what it reads from the running jobs, the passes it asks
// for, and what it lets a waiting job preempt.
#include "scheduler/levels.h"

#include <gtest/gtest.h>

#include "scheduler/pass_test_fixture.h"
#include "testing/builders.h"

namespace cohort::scheduler {
namespace {

using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

SchedulerConfig Las() {
  SchedulerConfig config;
  config.policy = Policy::kLeastAttainedService;
  return config;
}

// Job 10 (1 GPU, nothing before) and job 11 (2 GPUs, 2 GPU-hours before) of team t, both
// started at minute 0.
ClusterSnapshot TwoServed() {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  StartRunning(c, Job(10, 1, 1, 0, 0, "t"), {"n-0"}, Minutes(0));
  StartRunning(c, Job(11, 1, 2, 0, 0, "t"), {"n-0"}, Minutes(0)).attained = std::chrono::hours(2);
  return c;
}

TEST(Levels, LasReadsTheHighestQueueAndAsksForAPassWhenAJobCrossesAThreshold) {
  PassHarness h(TwoServed(), {Job(1, 1, 1, 0, 0, "t")}, Las(), Minutes(30));
  Levels levels(h.state);
  levels.Read();
  EXPECT_EQ(levels.highest_las_queue(), 1) << "job 11 has had 3 GPU-hours";
  // Job 10 has had 30 GPU-minutes: it reaches 1 GPU-hour at minute 60; job 11 reaches 16
  // GPU-hours much later.
  EXPECT_EQ(h.state.plan.recheck_at, Minutes(60));

  PassHarness idle(TwoServed(), {}, Las(), Minutes(30));
  Levels no_queue(idle.state);
  no_queue.Read();
  EXPECT_FALSE(idle.state.plan.recheck_at.has_value()) << "nobody waits: no pass is needed";
}

TEST(Levels, LasLetsAJobOfAnEarlierQueuePreemptOnlyJobsOfALaterOne) {
  PendingJob served = Job(2, 1, 1, 0, 0, "t");
  served.attained = std::chrono::hours(20);
  PassHarness h(TwoServed(), {Job(1, 1, 1, 0, 0, "t"), served}, Las(), Minutes(30));
  Levels levels(h.state);
  levels.Read();
  LevelRights fresh = levels.RightsOf(h.job(0));
  EXPECT_TRUE(fresh.by_level);
  EXPECT_EQ(fresh.level, 0);
  EXPECT_FALSE(levels.RightsOf(h.job(1)).by_level) << "queue 2 is behind no running job";
  const RunningJob& job10 = h.cluster.running[0];
  const RunningJob& job11 = h.cluster.running[1];
  EXPECT_TRUE(levels.MayPreempt(fresh, h.job(0), job11, 1));
  EXPECT_FALSE(levels.MayPreempt(fresh, h.job(0), job10, 0)) << "the same queue";
}

TEST(Levels, DefaultPolicyPreemptsForALevelOnlyAfterTheDelayAndAsksForAPassThen) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  StartRunning(c, Job(10, 1, 1, 0, 0, "t"), {"n-0"}, Minutes(0)).attained = std::chrono::hours(20);
  int64_t ten_minutes_ago = ToMicros(Minutes(50));
  PassHarness h(
      c,
      {Job(1, 1, 1, 0, ten_minutes_ago, "t"), Job(2, 1, 1, 0, 0, "t"), Job(3, 1, 1, 0, 0, "other")},
      {}, Minutes(60));
  Levels levels(h.state);
  levels.Read();
  EXPECT_EQ(levels.highest_level().at("t"), 2);
  // Job 2 is promoted once it has waited promote_after (2 hours).
  EXPECT_EQ(h.state.plan.recheck_at, Minutes(120));

  LevelRights early = levels.RightsOf(h.job(0));
  EXPECT_FALSE(early.by_level) << "it has waited 10 of the 30 minutes";
  EXPECT_EQ(h.state.plan.recheck_at, Minutes(80));
  EXPECT_TRUE(levels.RightsOf(h.job(1)).by_level);
  EXPECT_FALSE(levels.RightsOf(h.job(2)).by_level) << "levels count within a team";
}

TEST(Levels, DefaultPolicyLeavesProtectedJobsOutUntilTheirProtectionEnds) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  // Started at minute 180 after waiting since 0: it was promoted (at 120), and is protected
  // for protected_quantum (1 hour). Unprotected, it would be of level 0.
  StartRunning(c, Job(10, 1, 1, 0, 0, "t"), {"n-0"}, Minutes(180));
  PassHarness h(c, {Job(1, 1, 1, 0, ToMicros(Minutes(190)), "t")}, {}, Minutes(200));
  Levels levels(h.state);
  levels.Read();
  EXPECT_TRUE(levels.highest_level().empty());
  EXPECT_EQ(h.state.plan.recheck_at, Minutes(240)) << "when its protection ends";
}

TEST(Levels, SrtfOracleComparesTheGpuTimeTrulyLeft) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  // 2 GPUs for another hour: 120 GPU-minutes left at minute 40.
  StartRunning(c, Job(10, 1, 2, 0, 0, "t"), {"n-0"}, Minutes(0)).oracle_ends_at = Minutes(100);
  PendingJob short_job = Job(1, 1, 1, 0, 0, "t");
  short_job.oracle_remaining = std::chrono::minutes(30);
  PendingJob long_job = Job(2, 1, 1, 0, 0, "t");
  long_job.oracle_remaining = std::chrono::hours(3);
  SchedulerConfig srtf;
  srtf.policy = Policy::kSrtfOracle;
  PassHarness h(c, {short_job, long_job}, srtf, Minutes(40));
  Levels levels(h.state);
  levels.Read();
  EXPECT_EQ(levels.most_service_left(), std::chrono::minutes(120));
  LevelRights rights = levels.RightsOf(h.job(0));
  EXPECT_TRUE(rights.by_service);
  EXPECT_EQ(rights.service, std::chrono::minutes(30));
  EXPECT_TRUE(levels.MayPreempt(rights, h.job(0), h.cluster.running[0], 0));
  EXPECT_FALSE(levels.RightsOf(h.job(1)).by_service);
}

}  // namespace
}  // namespace cohort::scheduler
