// The reservations stage on its own (reservations.h): when a job is reserved to start, what it
// holds from now on, and how many reservations a pass makes.
#include "scheduler/reservations.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/pass_test_fixture.h"
#include "testing/builders.h"

namespace cohort::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAre;
using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

// Two nodes of 4 GPUs: n-0 busy until minute 50, n-1 half busy until minute 20.
ClusterSnapshot KnownEnds() {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  StartRunning(c, Job(10, 1, 4), {"n-0"}, Minutes(0), Minutes(50));
  StartRunning(c, Job(11, 1, 2), {"n-1"}, Minutes(0), Minutes(20));
  return c;
}

TEST(Reservations, AJobIsReservedAtTheFirstEndThatLetsItFitAndHoldsWhatIsFreeThere) {
  PassHarness h(KnownEnds(), {Job(1, 1, 4), Job(2, 1, 2)});
  Reservations reservations(h.state);
  EXPECT_FALSE(reservations.unknown_ends());
  reservations.Reserve(h.job(0));
  ASSERT_THAT(h.state.plan.waiting, SizeIs(1));
  EXPECT_EQ(h.state.plan.waiting[0].reserved_start, Minutes(20)) << "n-1 once job 11 ends";
  EXPECT_THAT(h.state.plan.waiting[0].reason, HasSubstr("reserved to start by"));
  EXPECT_EQ(h.state.earliest_reservation, Minutes(20));
  EXPECT_EQ(h.state.unreserved.free_gpus(), 0) << "n-1's 2 free GPUs are held for it";
  EXPECT_EQ(h.state.free.free_gpus(), 2);
  EXPECT_EQ(reservations.counted(), 1);

  // All of n-1 at minute 20 is the first job's, job 11's GPUs too: the second waits for n-0.
  reservations.Reserve(h.job(1));
  ASSERT_THAT(h.state.plan.waiting, SizeIs(2));
  EXPECT_EQ(h.state.plan.waiting[1].reserved_start, Minutes(50));
}

TEST(Reservations, TheEndOfAReservedJobIsAReleaseForTheNext) {
  PendingJob ten_minutes = Job(1, 1, 4);
  ten_minutes.max_runtime = std::chrono::minutes(10);
  PassHarness h(KnownEnds(), {ten_minutes, Job(2, 1, 4)});
  Reservations reservations(h.state);
  reservations.Reserve(h.job(0));
  reservations.Reserve(h.job(1));
  ASSERT_THAT(h.state.plan.waiting, SizeIs(2));
  EXPECT_EQ(h.state.plan.waiting[1].reserved_start, Minutes(30))
      << "n-1 again, once the first job's 10 minutes from minute 20 are over";
}

TEST(Reservations, APassMakesOnlySoManyButJobsWithinTheirGuaranteeReserveBeyond) {
  SchedulerConfig one;
  one.reservations = 1;
  PassHarness h(KnownEnds(), {Job(1, 1, 4), Job(2, 1, 4)}, one);
  Reservations reservations(h.state);
  EXPECT_TRUE(reservations.TryReserve(h.job(0)));
  EXPECT_FALSE(reservations.TryReserve(h.job(1)));
  EXPECT_EQ(reservations.counted(), 1);
  EXPECT_THAT(h.state.plan.waiting, SizeIs(1)) << "the second job's reason is the caller's";

  ClusterSnapshot teams = KnownEnds();
  teams.teams = {TeamQuota{"t", 8, std::nullopt}};
  SchedulerConfig none;
  none.reservations = 0;
  PassHarness g(teams, {Job(1, 1, 4, 0, 0, "t"), Job(2, 1, 4, 0, 0, "t"), Job(3, 1, 4, 0, 0, "t")},
                none);
  Reservations guaranteed(g.state);
  g.state.within_guarantee = true;  // as Pass::Consider finds for each of them
  EXPECT_TRUE(guaranteed.TryReserve(g.job(0)));
  EXPECT_TRUE(guaranteed.TryReserve(g.job(1)));
  EXPECT_FALSE(guaranteed.TryReserve(g.job(2))) << "12 GPUs reserved would pass the guarantee";
  EXPECT_EQ(guaranteed.counted(), 0);
}

TEST(Reservations, WithoutKnownEndsOneJobHoldsTheNodesClosestToFitting) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  StartRunning(c, Job(10, 1, 4), {"n-0"}, Minutes(0));
  StartRunning(c, Job(11, 1, 2), {"n-1"}, Minutes(0));
  PassHarness h(c, {Job(1, 1, 4), Job(2, 1, 4)}, {}, Minutes(5));
  Reservations reservations(h.state);
  EXPECT_TRUE(reservations.unknown_ends());
  reservations.Reserve(h.job(0));
  ASSERT_THAT(h.state.plan.waiting, SizeIs(1));
  EXPECT_THAT(h.state.plan.waiting[0].reason, HasSubstr("holding n-1 for it"));
  EXPECT_FALSE(h.state.plan.waiting[0].reserved_start.has_value());
  EXPECT_EQ(h.state.earliest_reservation, Minutes(5)) << "only jobs that end now may use it";
  EXPECT_EQ(h.state.unreserved.free_gpus(), 0);

  reservations.Reserve(h.job(1));
  ASSERT_THAT(h.state.plan.waiting, SizeIs(2));
  EXPECT_THAT(h.state.plan.waiting[1].reason, ::testing::Not(HasSubstr("holding")))
      << "one job drains nodes at a time";
}

// A reservation is a placement too (CapacityIndex::Place): replicas of a group with
// distinct_nodes are reserved on nodes of their own, whether ends are known or not.
TEST(Reservations, ReplicasThatNeedANodeEachAreReservedOnNodesApart) {
  PendingJob packed = Job(1, 2, 2);
  PendingJob apart = Job(2, 2, 2);
  for (auto& t : apart.tasks) t.distinct_nodes = true;
  {
    PassHarness h(KnownEnds(), {packed});
    Reservations reservations(h.state);
    reservations.Reserve(h.job(0));
    ASSERT_THAT(h.state.plan.waiting, SizeIs(1));
    EXPECT_EQ(h.state.plan.waiting[0].reserved_start, Minutes(20)) << "both on n-1";
    EXPECT_THAT(h.state.plan.waiting[0].reserved_nodes, ElementsAre("n-1"));
  }
  {
    PassHarness h(KnownEnds(), {apart});
    Reservations reservations(h.state);
    reservations.Reserve(h.job(0));
    ASSERT_THAT(h.state.plan.waiting, SizeIs(1));
    EXPECT_EQ(h.state.plan.waiting[0].reserved_start, Minutes(50)) << "n-0 ends at minute 50";
    EXPECT_THAT(h.state.plan.waiting[0].reserved_nodes, UnorderedElementsAre("n-0", "n-1"));
  }
  // Without known ends, the nodes held are apart too.
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  StartRunning(c, Job(10, 1, 4), {"n-0"}, Minutes(0));
  StartRunning(c, Job(11, 1, 2), {"n-1"}, Minutes(0));
  {
    PassHarness h(c, {packed}, {}, Minutes(5));
    Reservations reservations(h.state);
    reservations.Reserve(h.job(0));
    EXPECT_THAT(h.state.plan.waiting[0].reason, HasSubstr("holding n-1 for it"));
  }
  {
    PassHarness h(c, {apart}, {}, Minutes(5));
    Reservations reservations(h.state);
    reservations.Reserve(h.job(0));
    EXPECT_THAT(h.state.plan.waiting[0].reason, HasSubstr("holding n-0, n-1 for it"));
  }
}

TEST(Reservations, AJobStartedThisPassEndsAtItsMaxRuntime) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  StartRunning(c, Job(10, 1, 4), {"n-1"}, Minutes(0), Minutes(60));
  PendingJob ten_minutes = Job(1, 1, 4);
  ten_minutes.max_runtime = std::chrono::minutes(10);
  PassHarness h(c, {ten_minutes, Job(2, 1, 4), Job(3, 1, 1)});
  Reservations reservations(h.state);
  auto placement = h.state.unreserved.Place(h.job(0).tasks);
  ASSERT_TRUE(placement.has_value());
  h.state.free.Take(h.job(0).tasks, *placement);  // as Pass::Start does
  h.state.unreserved.Take(h.job(0).tasks, *placement);
  reservations.Started(h.job(0), *placement);
  reservations.Reserve(h.job(1));
  ASSERT_THAT(h.state.plan.waiting, SizeIs(1));
  EXPECT_EQ(h.state.plan.waiting[0].reserved_start, Minutes(10));

  EXPECT_FALSE(reservations.unknown_ends());
  reservations.Started(h.job(2), {TaskPlacement{"n-0", {0}}});
  EXPECT_TRUE(reservations.unknown_ends()) << "job 3 has no max_runtime";
}

TEST(Reservations, AClaimHoldsForTheJobFromNowOnAndTellsTheResidue) {
  PassHarness h(KnownEnds(), {Job(1, 1, 2, 0, 0, "t"), Job(2, 1, 2, 0, 0, "t"), Job(3, 1, 2)}, {},
                Minutes(5), /*with_residue=*/true);
  std::vector<TaskPlacement> n1 = {TaskPlacement{"n-1", {2, 3}}};
  Claim(h.state, h.job(0), n1);
  EXPECT_EQ(h.state.earliest_reservation, Minutes(5));
  EXPECT_EQ(h.state.unreserved.free_gpus(), 0);
  EXPECT_EQ(h.state.guaranteed.free_gpus(), 2) << "a job beyond its guarantee";
  ASSERT_THAT(h.state.borrowing_holds, SizeIs(1));
  EXPECT_EQ(h.state.held.at({"n-1", 3}), 1);

  // What is held for team t beyond its guarantee keeps t's own jobs out, not other teams'.
  {
    ScopedWhatIf what_if(h.state.guaranteed);
    TakeOwnHolds(h.state, h.job(1));
    EXPECT_EQ(h.state.guaranteed.free_gpus(), 0);
  }
  {
    ScopedWhatIf what_if(h.state.guaranteed);
    TakeOwnHolds(h.state, h.job(2));
    EXPECT_EQ(h.state.guaranteed.free_gpus(), 2);
  }

  h.state.within_guarantee = true;
  Hold(h.state, h.job(1), n1);
  EXPECT_EQ(h.state.guaranteed.free_gpus(), 0) << "held within a guarantee: kept from all";
  EXPECT_THAT(h.state.guarantee_holds, SizeIs(1));
}

}  // namespace
}  // namespace cohort::scheduler
