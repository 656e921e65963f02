// The order of jobs under each policy, and teams' quotas and limits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/scheduler.h"
#include "testing/builders.h"

namespace cohort::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

TEST(FairShare, TeamBelowItsGuaranteeGoesFirst) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  c.teams = {TeamQuota{"vision", 2, std::nullopt}, TeamQuota{"nlp", 2, std::nullopt}};
  // vision submitted first but already holds 3 GPUs elsewhere (over its guarantee of 2).
  AddNodes(c, "busy", 1, 3);
  StartRunning(c, Job(90, 1, 3, 0, 0, "vision"), {"busy-0"}, FromMicros(0));
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 0, 1, "vision"), Job(2, 1, 4, 0, 2, "nlp")});
  EXPECT_THAT(PlacedIds(plan), ElementsAre(2));
}

TEST(FairShare, AlternatesBetweenTeamsByShare) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  c.teams = {TeamQuota{"a", 2, std::nullopt}, TeamQuota{"b", 2, std::nullopt}};
  // Team a submitted all of its jobs first; fair share still gives b half the GPUs.
  Plan plan =
      RunScheduler(c, {Job(1, 1, 1, 0, 1, "a"), Job(2, 1, 1, 0, 2, "a"), Job(3, 1, 1, 0, 3, "a"),
                       Job(4, 1, 1, 0, 4, "b"), Job(5, 1, 1, 0, 5, "b"), Job(6, 1, 1, 0, 6, "b")});
  std::vector<JobId> placed = PlacedIds(plan);
  std::sort(placed.begin(), placed.end());
  EXPECT_THAT(placed, ElementsAre(1, 2, 4, 5));
}

TEST(FairShare, WithinATeamPriorityThenUserShareThenSubmission) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 3);
  AddNodes(c, "busy", 1, 2);
  StartRunning(c, Job(90, 1, 2, 0, 0, "t", "ada"), {"busy-0"}, FromMicros(0));
  Plan plan = RunScheduler(c, {
                                  Job(1, 1, 1, 0, 1, "t", "ada"),
                                  Job(2, 1, 1, 0, 2, "t", "bob"),
                                  Job(3, 1, 1, 100, 3, "t", "ada"),
                                  Job(4, 1, 1, 0, 4, "t", "bob"),
                              });
  // High priority first (3); then bob, who holds nothing, before ada (2 GPUs), twice: bob's 2
  // and 4 would come before ada's 1, but only 3 GPUs exist.
  EXPECT_THAT(PlacedIds(plan), ElementsAre(3, 2, 4));
}

TEST(Fifo, SubmissionOrderOnlyAndStrictWithoutBackfill) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  SchedulerConfig config;
  config.policy = Policy::kFifo;
  config.backfill = false;
  Plan plan =
      RunScheduler(c, {Job(1, 1, 2, 0, 1), Job(2, 1, 4, 100, 2), Job(3, 1, 1, 0, 3)}, config);
  // 1 starts; 2 (priority ignored by fifo) does not fit and blocks 3, which would fit.
  EXPECT_THAT(PlacedIds(plan), ElementsAre(1));
  ASSERT_NE(ReasonFor(plan, 3), nullptr);
  EXPECT_THAT(ReasonFor(plan, 3)->reason, HasSubstr("waiting behind job 2"));
}

TEST(LeastAttainedService, LeastServedFirst) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 1);
  SchedulerConfig config;
  config.policy = Policy::kLeastAttainedService;
  PendingJob veteran = Job(1, 1, 1, 0, 1);
  veteran.attained = std::chrono::hours(5);
  PendingJob fresh = Job(2, 1, 1, 0, 2);
  Plan plan = RunScheduler(c, {veteran, fresh}, config);
  EXPECT_THAT(PlacedIds(plan), ElementsAre(2));
}

TEST(TeamLimit, NeverBeyondMaxGpus) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  c.teams = {TeamQuota{"small", 1, 3}};
  Plan plan = RunScheduler(
      c, {Job(1, 1, 2, 0, 1, "small"), Job(2, 1, 2, 0, 2, "small"), Job(3, 1, 1, 0, 3, "small")});
  EXPECT_THAT(PlacedIds(plan), ElementsAre(1, 3));
  ASSERT_NE(ReasonFor(plan, 2), nullptr);
  EXPECT_THAT(ReasonFor(plan, 2)->reason,
              HasSubstr("team small holds 2 of the 3 GPUs it may use at most"));
}

TEST(Policy, ParsesNames) {
  EXPECT_EQ(*ParsePolicy("default"), Policy::kFairShare);
  EXPECT_EQ(*ParsePolicy("fifo"), Policy::kFifo);
  EXPECT_EQ(*ParsePolicy("las"), Policy::kLeastAttainedService);
  EXPECT_FALSE(ParsePolicy("random").ok());
}

}  // namespace
}  // namespace cohort::scheduler

namespace cohort::scheduler {
namespace {

using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

TEST(LeastAttainedService, NewJobsPreemptJobsThatHadMoreGpuTime) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  // Running for 2 hours on 4 GPUs: 8 GPU-hours, queue 1 (threshold 1 GPU-hour).
  StartRunning(c, Job(10, 1, 4), {"n-0"}, Minutes(0));
  SchedulerConfig config;
  config.policy = Policy::kLeastAttainedService;
  Plan plan = RunScheduler(c, {Job(1, 1, 2, 0, 1)}, config, Minutes(120));
  ASSERT_EQ(plan.preemptions.size(), 1u);
  EXPECT_EQ(plan.preemptions[0].victim, 10);
  EXPECT_THAT(plan.preemptions[0].reason, ::testing::HasSubstr("least attained service"));
  // Another policy, or a pending job that has had as much: no preemption.
  EXPECT_TRUE(RunScheduler(c, {Job(1, 1, 2, 0, 1)}, {}, Minutes(120)).preemptions.empty());
  PendingJob served = Job(2, 1, 2, 0, 1);
  served.attained = std::chrono::hours(3);
  EXPECT_TRUE(RunScheduler(c, {served}, config, Minutes(120)).preemptions.empty());
}

}  // namespace
}  // namespace cohort::scheduler
