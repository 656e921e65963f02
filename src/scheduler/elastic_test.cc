// Elastic jobs: they grow into idle GPUs and give replicas back, highest index first, before
// anything is preempted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/elastic.h"
#include "scheduler/pass_test_fixture.h"
#include "scheduler/scheduler.h"
#include "testing/builders.h"

namespace cohort::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

// A running elastic job of `replicas` 1-GPU workers on `node`, allowed min..max.
RunningJob& Elastic(ClusterSnapshot& c, JobId id, int replicas, int min, int max,
                    const std::string& node, Timestamp started, const std::string& team = "t") {
  PendingJob j = Job(id, replicas, 1, 0, 0, team);
  RunningJob& r =
      StartRunning(c, j, std::vector<std::string>(static_cast<size_t>(replicas), node), started);
  r.elastic.push_back(RunningJob::ElasticGroup{"worker", min, max, j.tasks[0].resources, replicas});
  r.task_started.assign(static_cast<size_t>(replicas), started);
  return r;
}

TEST(Elastic, GrowsIntoIdleGpusUpToItsMaximum) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  Elastic(c, 10, 2, 2, 6, "n-0", Minutes(0));
  Plan plan = RunScheduler(c, {}, {}, Minutes(30));
  ASSERT_EQ(plan.growths.size(), 1u);
  const Growth& g = plan.growths[0];
  EXPECT_EQ(g.job_id, 10);
  ASSERT_EQ(g.tasks.size(), 4u);
  EXPECT_EQ(g.tasks[0].index, 2);
  EXPECT_EQ(g.tasks[3].index, 5);
  std::set<int> gpus;
  for (const auto& p : g.placement) gpus.insert(p.gpus.begin(), p.gpus.end());
  EXPECT_EQ(gpus, (std::set<int>{2, 3, 4, 5}));
}

TEST(Elastic, NeverGrowsIntoWhatAWaitingJobHolds) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  Elastic(c, 10, 2, 2, 8, "n-0", Minutes(0));
  // A gang of 2 x 4 waits (n-0 is half used); it holds n-1, so nothing grows there.
  Plan plan = RunScheduler(c, {Job(1, 2, 4)}, {}, Minutes(30));
  EXPECT_THAT(plan.placements, IsEmpty());
  for (const auto& g : plan.growths) {
    for (const auto& p : g.placement) EXPECT_NE(p.node_id, "n-1");
  }
}

TEST(Elastic, ShrinksHighestReplicasFirstBeforePreemptingAnything) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  Elastic(c, 10, 4, 2, 4, "n-0", Minutes(0));
  // A normal job needing 2 GPUs: two surplus replicas go, indices 3 then 2. Nothing is
  // preempted, even for a high-priority job that could preempt.
  Plan plan = RunScheduler(c, {Job(1, 1, 2, 100, 1, "t")}, {}, Minutes(30));
  EXPECT_THAT(plan.preemptions, IsEmpty());
  ASSERT_EQ(plan.shrinks.size(), 1u);
  EXPECT_EQ(plan.shrinks[0].job_id, 10);
  EXPECT_EQ(plan.shrinks[0].role, "worker");
  EXPECT_THAT(plan.shrinks[0].indices, ElementsAre(3, 2));
  EXPECT_EQ(plan.shrinks[0].for_job, 1);
  EXPECT_THAT(ReasonFor(plan, 1)->reason, HasSubstr("taking back elastic replicas"));
  EXPECT_THAT(plan.growths, IsEmpty()) << "a job giving replicas back does not grow again";
}

TEST(Elastic, NeverBelowItsMinimumNorYoungReplicas) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  Elastic(c, 10, 4, 4, 8, "n-0", Minutes(0));  // at its minimum
  Plan at_min = RunScheduler(c, {Job(1, 1, 2)}, {}, Minutes(30));
  EXPECT_THAT(at_min.shrinks, IsEmpty());
  ClusterSnapshot d;
  AddNodes(d, "n", 1, 4);
  Elastic(d, 10, 4, 2, 8, "n-0", Minutes(29) + Duration(1));  // grown just now
  Plan young = RunScheduler(d, {Job(1, 1, 2)}, {}, Minutes(30));
  EXPECT_THAT(young.shrinks, IsEmpty());
}

TEST(Elastic, GrowthRespectsTheTeamLimit) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  c.teams = {TeamQuota{"t", 2, 3}};
  Elastic(c, 10, 2, 2, 8, "n-0", Minutes(0));
  Plan plan = RunScheduler(c, {}, {}, Minutes(30));
  ASSERT_EQ(plan.growths.size(), 1u);
  EXPECT_EQ(plan.growths[0].tasks.size(), 1u);
}

TEST(Elastic, AGroupWithDistinctNodesGrowsOnlyOntoNodesWithoutOneOfItsReplicas) {
  ClusterSnapshot c;
  AddNodes(c, "n", 3, 8);
  RunningJob& r = Elastic(c, 10, 1, 1, 4, "n-0", Minutes(0));
  r.tasks[0].distinct_nodes = true;
  r.elastic[0].distinct_nodes = true;
  Plan plan = RunScheduler(c, {}, {}, Minutes(30));
  ASSERT_EQ(plan.growths.size(), 1u);
  const Growth& g = plan.growths[0];
  ASSERT_EQ(g.tasks.size(), 2u) << "one replica each on n-1 and n-2: below its maximum of 4, "
                                   "though n-0 has 7 GPUs free";
  EXPECT_EQ(g.placement[0].node_id, "n-1");
  EXPECT_EQ(g.placement[1].node_id, "n-2");
  EXPECT_TRUE(g.tasks[0].distinct_nodes);
  EXPECT_TRUE(g.tasks[1].distinct_nodes);

  // A replica on its way out (a stopping job of its own with the same id, as the cluster state
  // lists it) still runs on its node: nothing grows there either.
  PendingJob leaving = Job(10, 1, 1, 0, 0, "t");
  leaving.tasks[0].index = 1;
  leaving.tasks[0].distinct_nodes = true;
  StartRunning(c, leaving, {"n-1"}, Minutes(0)).stopping = true;
  plan = RunScheduler(c, {}, {}, Minutes(30));
  ASSERT_EQ(plan.growths.size(), 1u);
  ASSERT_EQ(plan.growths[0].tasks.size(), 1u);
  EXPECT_EQ(plan.growths[0].placement[0].node_id, "n-2");
}

// The stage's own functions (elastic.h).

TEST(ElasticReplicas, SurplusIsEachReplicaAboveTheMinimumPastItsMinimumRunTime) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  RunningJob& r = Elastic(c, 10, 5, 2, 8, "n-0", Minutes(0));
  r.task_started[4] = Minutes(30) - std::chrono::seconds(30);  // grown just now
  PassHarness h(c, {}, {}, Minutes(30));
  ElasticReplicas elastic(h.state);
  const std::vector<RunningJob>& surplus = elastic.Surplus();
  ASSERT_THAT(surplus, SizeIs(2)) << "5 replicas, 2 of them the minimum, 1 too young";
  EXPECT_EQ(surplus[0].tasks[0].index, 3);
  EXPECT_EQ(surplus[1].tasks[0].index, 2);
  EXPECT_EQ(surplus[0].placement[0].node_id, "n-0");
  EXPECT_EQ(&elastic.Surplus(), &surplus) << "built once a pass";
}

TEST(ElasticReplicas, ShrinkingCostsASearchAndTheShrunkJobDoesNotGrow) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  Elastic(c, 10, 4, 2, 8, "n-0", Minutes(0));
  PassHarness spent(c, {Job(1, 1, 1)}, {}, Minutes(30));
  ElasticReplicas none(spent.state);
  spent.state.preemption_searches = kMaxPreemptionSearches;
  EXPECT_FALSE(none.TryShrink(spent.job(0)));
  EXPECT_THAT(spent.state.plan.shrinks, IsEmpty());

  PassHarness h(c, {Job(1, 1, 1), Job(2, 1, 1)}, {}, Minutes(30));
  ElasticReplicas elastic(h.state);
  ASSERT_TRUE(elastic.TryShrink(h.job(0)));
  EXPECT_EQ(h.state.preemption_searches, 1);
  ASSERT_THAT(h.state.plan.shrinks, SizeIs(1));
  EXPECT_THAT(h.state.plan.shrinks[0].indices, ElementsAre(3));
  EXPECT_EQ(h.state.earliest_reservation, Minutes(30)) << "it claims the replica's GPU";
  // The next job takes the next replica, not the same one again.
  ASSERT_TRUE(elastic.TryShrink(h.job(1)));
  ASSERT_THAT(h.state.plan.shrinks, SizeIs(2));
  EXPECT_THAT(h.state.plan.shrinks[1].indices, ElementsAre(2));
  EXPECT_FALSE(elastic.TryShrink(h.job(1))) << "none left above the minimum";
  elastic.Grow();
  EXPECT_THAT(h.state.plan.growths, IsEmpty());
}

TEST(ElasticReplicas, GrowsOnlyIntoWhatNoReservationHolds) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 8);
  Elastic(c, 10, 2, 2, 8, "n-0", Minutes(0));
  PassHarness h(c, {}, {}, Minutes(30));
  // Something waiting holds 4 of the 6 free GPUs.
  h.state.unreserved.Take({TaskRequest{"worker", 0, Resources{4, 0, 0}}},
                          {TaskPlacement{"n-0", {2, 3, 4, 5}}});
  ElasticReplicas elastic(h.state);
  elastic.Grow();
  ASSERT_THAT(h.state.plan.growths, SizeIs(1));
  EXPECT_THAT(h.state.plan.growths[0].tasks, SizeIs(2));
  EXPECT_EQ(h.state.free.free_gpus(), 4) << "what it grew into is taken";
  EXPECT_EQ(h.state.order.TeamUsage("t").held.gpus, 4) << "and counts for its team";
}

}  // namespace
}  // namespace cohort::scheduler
