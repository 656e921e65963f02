// Reservations and backfill: a gang that cannot start is not overtaken by jobs that would
// delay it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/scheduler.h"
#include "testing/builders.h"

namespace cohort::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

PendingJob WithRuntime(PendingJob job, int minutes) {
  job.max_runtime = std::chrono::minutes(minutes);
  return job;
}

TEST(Backfill, ShortJobsFillTheGapButLongOnesDoNotDelayTheGang) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  // 6 GPUs busy until minute 60.
  StartRunning(c, Job(10, 1, 6, 0, 0), {"n-0"}, Minutes(0), Minutes(60));
  Timestamp now = Minutes(10);
  // A gang of 8 waits for minute 60. A 2-GPU job of 30 minutes ends before then: it may run.
  // A 2-GPU job of 90 minutes would delay the gang: it must not.
  Plan plan = RunScheduler(c,
                           {Job(1, 2, 4, 0, 1), WithRuntime(Job(2, 1, 2, 0, 2), 90),
                            WithRuntime(Job(3, 1, 2, 0, 3), 30)},
                           WithoutLevels(), now);
  EXPECT_THAT(PlacedIds(plan), ElementsAre(3));
  const PendingReason* gang = ReasonFor(plan, 1);
  ASSERT_NE(gang, nullptr);
  ASSERT_TRUE(gang->reserved_start.has_value());
  EXPECT_EQ(*gang->reserved_start, Minutes(60));
  EXPECT_THAT(gang->reason, HasSubstr("reserved to start by"));
  // Where it will start, so that the master can fetch its datasets there ahead of it.
  EXPECT_THAT(gang->reserved_nodes, ElementsAre("n-0"));
}

TEST(Backfill, AReservationBeyondAGuaranteeDoesNotKeepAnotherTeamOutOfItsOwn) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  c.teams = {TeamQuota{"vision", 4, std::nullopt}, TeamQuota{"nlp", 4, std::nullopt}};
  // Both teams below their guarantee, until minute 60; 3 GPUs free.
  StartRunning(c, Job(10, 1, 2, 0, 0, "vision"), {"n-0"}, Minutes(0), Minutes(60));
  StartRunning(c, Job(11, 1, 3, 0, 0, "nlp"), {"n-0"}, Minutes(0), Minutes(60));
  // vision's gang of 8 would take it beyond its guarantee: it is reserved to start at minute
  // 60, holding the 3 free GPUs. nlp's long 1-GPU job is within nlp's guarantee: it starts now on
  // one of them, as nobody borrows and nobody could be reclaimed from.
  Plan plan = RunScheduler(
      c,
      {WithRuntime(Job(1, 2, 4, 0, 1, "vision"), 30), WithRuntime(Job(2, 1, 1, 0, 2, "nlp"), 90)},
      WithoutLevels(), Minutes(10));
  EXPECT_THAT(PlacedIds(plan), ElementsAre(2));
  EXPECT_THAT(plan.preemptions, IsEmpty());
  ASSERT_TRUE(ReasonFor(plan, 1)->reserved_start.has_value());
}

TEST(Backfill, AJobWithinItsGuaranteeStillWaitsForItsOwnTeamsReservation) {
  // One team whose guarantee is the whole node: its reservations must hold against its own
  // jobs, or there would be no reservations in a cluster of one team.
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  c.teams = {TeamQuota{"t", 8, std::nullopt}};
  StartRunning(c, Job(10, 1, 6, 0, 0, "t"), {"n-0"}, Minutes(0), Minutes(60));
  Plan plan = RunScheduler(
      c, {WithRuntime(Job(1, 2, 4, 0, 1, "t"), 30), WithRuntime(Job(2, 1, 2, 0, 2, "t"), 90)},
      WithoutLevels(), Minutes(10));
  EXPECT_THAT(PlacedIds(plan), IsEmpty()) << "the 2-GPU job would delay the gang";
}

TEST(Backfill, JobsWithinTheirGuaranteeReserveBeyondTheLimit) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  c.teams = {TeamQuota{"big", 7, std::nullopt}, TeamQuota{"small", 1, std::nullopt}};
  StartRunning(c, Job(10, 1, 4, 0, 0, "big"), {"n-0"}, Minutes(0), Minutes(60));
  StartRunning(c, Job(11, 1, 4, 0, 0, "small"), {"n-1"}, Minutes(0), Minutes(90));
  SchedulerConfig config = WithoutLevels();
  config.reservations = 1;
  config.quota_reclaim = false;
  // big's 3 GPUs fit in its guarantee (4 + 3 of 7): its reservation (n-0 at minute 60) does not
  // use up the one the limit allows, which small's borrowing job gets (n-1 at minute 90).
  Plan plan =
      RunScheduler(c, {Job(1, 1, 4, 0, 1, "small"), WithRuntime(Job(2, 1, 3, 0, 2, "big"), 30)},
                   config, Minutes(10));
  EXPECT_THAT(plan.placements, IsEmpty());
  ASSERT_TRUE(ReasonFor(plan, 2)->reserved_start.has_value());
  EXPECT_EQ(*ReasonFor(plan, 2)->reserved_start, Minutes(60));
  ASSERT_TRUE(ReasonFor(plan, 1)->reserved_start.has_value());
  EXPECT_EQ(*ReasonFor(plan, 1)->reserved_start, Minutes(90));
  // las is a reference, kept as published: the one reservation goes to the first in its order.
  SchedulerConfig las = config;
  las.policy = Policy::kLeastAttainedService;
  Plan reference =
      RunScheduler(c, {Job(1, 1, 4, 0, 1, "small"), WithRuntime(Job(2, 1, 3, 0, 2, "big"), 30)},
                   las, Minutes(10));
  EXPECT_TRUE(ReasonFor(reference, 1)->reserved_start.has_value());
  EXPECT_FALSE(ReasonFor(reference, 2)->reserved_start.has_value());
  // A second job of big that would also fit in the guarantee, but not beside the first one's
  // reservation, does not reserve beyond the limit.
  Plan two = RunScheduler(c,
                          {WithRuntime(Job(2, 1, 3, 0, 2, "big"), 30),
                           WithRuntime(Job(3, 1, 3, 0, 3, "big"), 30), Job(1, 1, 4, 0, 4, "small")},
                          config, Minutes(10));
  EXPECT_TRUE(ReasonFor(two, 2)->reserved_start.has_value());
  EXPECT_TRUE(ReasonFor(two, 3)->reserved_start.has_value()) << "the one the limit allows";
  EXPECT_FALSE(ReasonFor(two, 1)->reserved_start.has_value());
}

TEST(Backfill, ReservationsWithinGuaranteesAreBoundedPerPass) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  c.teams = {TeamQuota{"x", 0, std::nullopt}};
  StartRunning(c, Job(1000, 1, 4, 0, 0, "x"), {"n-0"}, Minutes(0), Minutes(60));
  // 24 teams guaranteed a GPU each, each with a job of 1 GPU that would have one: 16 reserve
  // within their guarantee, 4 more by the count of reservations, and the rest wait.
  std::vector<PendingJob> pending;
  for (int t = 0; t < 24; ++t) {
    std::string team = "t" + std::to_string(t);
    c.teams.push_back(TeamQuota{team, 1, std::nullopt});
    pending.push_back(WithRuntime(Job(t + 1, 1, 1, 0, t + 1, team), 30));
  }
  SchedulerConfig config = WithoutLevels();
  config.quota_reclaim = false;
  Plan plan = RunScheduler(c, pending, config, Minutes(10));
  EXPECT_THAT(plan.placements, IsEmpty());
  int reserved = 0;
  for (const auto& w : plan.waiting) reserved += w.reserved_start.has_value();
  EXPECT_EQ(reserved, 16 + 4);
}

TEST(Backfill, ASecondReservationComesAfterTheFirstNotOnTopOfIt) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  StartRunning(c, Job(10, 1, 8, 0, 0), {"n-0"}, Minutes(0), Minutes(60));
  // Both gangs need the whole node: the first gets it at minute 60, the second when the first
  // is over (90), not at 60 as well.
  Plan plan =
      RunScheduler(c, {WithRuntime(Job(1, 2, 4, 0, 1), 30), WithRuntime(Job(2, 2, 4, 0, 2), 30)},
                   WithoutLevels(), Minutes(10));
  ASSERT_TRUE(ReasonFor(plan, 1)->reserved_start.has_value());
  EXPECT_EQ(*ReasonFor(plan, 1)->reserved_start, Minutes(60));
  ASSERT_TRUE(ReasonFor(plan, 2)->reserved_start.has_value());
  EXPECT_EQ(*ReasonFor(plan, 2)->reserved_start, Minutes(90));
  // A gang reserved with no known end leaves the next one waiting, not draining other nodes.
  Plan open_ended = RunScheduler(c, {Job(1, 2, 4, 0, 1), WithRuntime(Job(2, 2, 4, 0, 2), 30)},
                                 WithoutLevels(), Minutes(10));
  EXPECT_FALSE(ReasonFor(open_ended, 2)->reserved_start.has_value());
  EXPECT_THAT(ReasonFor(open_ended, 2)->reason, Not(HasSubstr("holding")));
}

TEST(Backfill, JobsWithoutRuntimeNeverBackfillIntoAReservation) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  StartRunning(c, Job(10, 1, 4, 0, 0), {"n-0"}, Minutes(0), Minutes(60));
  // The gang of 8 holds n-1 (free now) for minute 60; an endless 1-GPU job may not take it.
  Plan plan = RunScheduler(c, {Job(1, 2, 4, 0, 1), Job(2, 1, 1, 0, 2)}, {}, Minutes(1));
  EXPECT_THAT(plan.placements, IsEmpty());
}

TEST(Backfill, WithoutKnownEndsTheGangStillDrainsItsNodes) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  StartRunning(c, Job(10, 1, 2, 0, 0), {"n-0"}, Minutes(0));  // no max_runtime
  // A gang of 2 x 4 cannot start; nothing that would outlive "now" may take its nodes.
  Plan plan = RunScheduler(c, {Job(1, 2, 4, 0, 1), Job(2, 1, 2, 0, 2)}, {}, Minutes(1));
  EXPECT_THAT(plan.placements, IsEmpty());
  EXPECT_THAT(ReasonFor(plan, 1)->reason, HasSubstr("holding n-0, n-1 for it"));
  // With a cluster default runtime, the estimate exists.
  SchedulerConfig config;
  config.default_runtime = std::chrono::hours(1);
  Plan estimated = RunScheduler(c, {Job(1, 2, 4, 0, 1)}, config, Minutes(1));
  ASSERT_TRUE(ReasonFor(estimated, 1)->reserved_start.has_value());
  EXPECT_EQ(*ReasonFor(estimated, 1)->reserved_start, Minutes(60));
}

TEST(Backfill, OffMeansStrictOrder) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  StartRunning(c, Job(10, 1, 6, 0, 0), {"n-0"}, Minutes(0), Minutes(60));
  SchedulerConfig config = WithoutLevels();
  config.backfill = false;
  Plan plan = RunScheduler(c, {Job(1, 2, 4, 0, 1), WithRuntime(Job(3, 1, 2, 0, 3), 30)}, config,
                           Minutes(10));
  EXPECT_THAT(plan.placements, IsEmpty());
}

}  // namespace
}  // namespace cohort::scheduler
