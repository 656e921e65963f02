#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "scheduler/capacity_index.h"
#include "scheduler/scheduler.h"
#include "testing/builders.h"

namespace cohort::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

TEST(GangScheduler, PlacesJobThatFits) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  Plan plan = RunScheduler(c, {Job(1, 2, 2)});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_THAT(plan.waiting, IsEmpty());
  const auto& p = plan.placements[0];
  EXPECT_EQ(p.job_id, 1);
  ASSERT_EQ(p.tasks.size(), 2u);
  EXPECT_THAT(p.tasks[0].gpus, ElementsAre(0, 1));
  EXPECT_THAT(p.tasks[1].gpus, ElementsAre(2, 3));
}

TEST(GangScheduler, GangThatDoesNotFitHoldsNothing) {
  ClusterSnapshot c;
  AddNodes(c, "n", 4, 4);
  Occupy(c, "n-0", 2);
  Occupy(c, "n-1", 2);
  // 3 x 3 GPUs needs three nodes with 3 free GPUs; only n-2 and n-3 have them. Nothing of the
  // gang is placed; it holds the nodes closest to fitting (n-2, n-3, n-0), and a job that fits
  // beside them (on n-1) still starts.
  Plan plan = RunScheduler(c, {Job(1, 3, 3, 0, 1), Job(2, 1, 2, 0, 2)});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].job_id, 2);
  EXPECT_EQ(plan.placements[0].tasks[0].node_id, "n-1");
  ASSERT_EQ(plan.waiting.size(), 1u);
  EXPECT_EQ(plan.waiting[0].job_id, 1);
  EXPECT_FALSE(plan.waiting[0].unschedulable);
  EXPECT_THAT(plan.waiting[0].reason, HasSubstr("waiting for resources"));
  EXPECT_THAT(plan.waiting[0].reason, HasSubstr("3 tasks started together"));
  EXPECT_THAT(plan.waiting[0].reason, HasSubstr("holding n-0, n-2, n-3 for it"));
}

TEST(GangScheduler, UsesFewestNodes) {
  ClusterSnapshot c;
  AddNodes(c, "small", 4, 2);
  AddNodes(c, "big", 1, 8);
  // 4 x 2 GPUs fits on the one 8-GPU node; spreading it over the small nodes would use 4.
  Plan plan = RunScheduler(c, {Job(1, 4, 2)});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(NodesOf(plan.placements[0]), std::set<std::string>{"big-0"});
}

TEST(GangScheduler, SpansNodesWhenNoSingleNodeHoldsTheGang) {
  ClusterSnapshot c;
  AddNodes(c, "n", 4, 4);
  Plan plan = RunScheduler(c, {Job(1, 2, 4)});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(NodesOf(plan.placements[0]).size(), 2u);
}

TEST(GangScheduler, BestFitKeepsLargeBlocksWhole) {
  ClusterSnapshot c;
  AddNodes(c, "n", 3, 8);
  Occupy(c, "n-1", 6);  // n-1 has 2 free: the tightest fit for a 2-GPU job
  Plan plan = RunScheduler(c, {Job(1, 1, 2)});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].tasks[0].node_id, "n-1");
  EXPECT_THAT(plan.placements[0].tasks[0].gpus, ElementsAre(0, 1));
}

TEST(GangScheduler, MultiNodeGangPrefersTightNodes) {
  ClusterSnapshot c;
  AddNodes(c, "n", 4, 8);
  Occupy(c, "n-2", 4);
  Occupy(c, "n-3", 4);
  // Two tasks of 4 GPUs, no node... n-0 alone holds both; fewest nodes wins over tightness.
  Plan one = RunScheduler(c, {Job(1, 2, 4)});
  ASSERT_EQ(one.placements.size(), 1u);
  EXPECT_EQ(NodesOf(one.placements[0]).size(), 1u);
  // Three tasks of 4 GPUs need two nodes: one full 8-GPU node plus the tightest 4-free node,
  // leaving the other 8-GPU node whole.
  Plan two = RunScheduler(c, {Job(2, 3, 4)});
  ASSERT_EQ(two.placements.size(), 1u);
  auto nodes = NodesOf(two.placements[0]);
  EXPECT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes.count("n-2") + nodes.count("n-3"), 1u);
  EXPECT_EQ(nodes.count("n-0") + nodes.count("n-1"), 1u);
}

TEST(GangScheduler, HigherPriorityFirstThenSubmissionOrder) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  // Each job wants the whole node; only one can run.
  Plan plan = RunScheduler(c, {Job(1, 1, 4, 0, 1), Job(2, 1, 4, 100, 5), Job(3, 1, 4, 100, 3)});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].job_id, 3);  // high priority, submitted before job 2
  ASSERT_EQ(plan.waiting.size(), 2u);
  EXPECT_EQ(plan.waiting[0].job_id, 2);
  EXPECT_EQ(plan.waiting[1].job_id, 1);
}

TEST(GangScheduler, NeverGivesAGpuTwice) {
  ClusterSnapshot c;
  AddNodes(c, "n", 3, 4);
  std::vector<PendingJob> pending;
  for (int i = 0; i < 10; ++i) pending.push_back(Job(i + 1, 1 + i % 3, 1 + i % 2, 0, i));
  Plan plan = RunScheduler(c, pending);
  std::set<std::pair<std::string, int>> seen;
  for (const auto& p : plan.placements) {
    for (const auto& t : p.tasks) {
      for (int g : t.gpus) EXPECT_TRUE(seen.insert({t.node_id, g}).second) << t.node_id << g;
    }
  }
  EXPECT_EQ(seen.size(), 12u);  // the mix fills the cluster exactly
  EXPECT_EQ(plan.placements.size() + plan.waiting.size(), pending.size());
}

TEST(GangScheduler, UnschedulableWhenNoNodeIsBigEnough) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  Plan plan = RunScheduler(c, {Job(1, 1, 8)});
  ASSERT_EQ(plan.waiting.size(), 1u);
  EXPECT_TRUE(plan.waiting[0].unschedulable);
  EXPECT_THAT(plan.waiting[0].reason,
              HasSubstr("task worker/0 needs 8 GPUs on one node, but the largest node has 4"));
}

TEST(GangScheduler, UnschedulableWhenClusterTooSmall) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  Plan plan = RunScheduler(c, {Job(1, 3, 4)});
  ASSERT_EQ(plan.waiting.size(), 1u);
  EXPECT_TRUE(plan.waiting[0].unschedulable);
  EXPECT_THAT(plan.waiting[0].reason, HasSubstr("needs 12 GPUs"));
}

TEST(GangScheduler, EmptyClusterWaits) {
  ClusterSnapshot c;
  Plan plan = RunScheduler(c, {Job(1, 1, 1)});
  ASSERT_EQ(plan.waiting.size(), 1u);
  EXPECT_EQ(plan.waiting[0].reason, "no nodes are ready");
}

TEST(GangScheduler, CpuOnlyJobsAndCpuLimits) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 0, /*cpus=*/4);
  PendingJob j = Job(1, 2, 0);
  j.tasks[0].resources.milli_cpus = 3000;
  j.tasks[1].resources.milli_cpus = 2000;  // 5 CPUs > 4
  Plan plan = RunScheduler(c, {j});
  EXPECT_THAT(plan.placements, IsEmpty());
  ASSERT_EQ(plan.waiting.size(), 1u);
  EXPECT_TRUE(plan.waiting[0].unschedulable);
}

TEST(GangScheduler, DeterministicForSameInput) {
  ClusterSnapshot c;
  AddNodes(c, "n", 5, 8);
  Occupy(c, "n-3", 3);
  std::vector<PendingJob> pending;
  for (int i = 0; i < 20; ++i) pending.push_back(Job(i + 1, 1 + i % 4, 1 + i % 3, i % 2, i));
  Plan a = RunScheduler(c, pending);
  Plan b = RunScheduler(c, pending);
  ASSERT_EQ(a.placements.size(), b.placements.size());
  for (size_t i = 0; i < a.placements.size(); ++i) {
    EXPECT_EQ(a.placements[i].job_id, b.placements[i].job_id);
    for (size_t t = 0; t < a.placements[i].tasks.size(); ++t) {
      EXPECT_EQ(a.placements[i].tasks[t].node_id, b.placements[i].tasks[t].node_id);
      EXPECT_EQ(a.placements[i].tasks[t].gpus, b.placements[i].tasks[t].gpus);
    }
  }
}

TEST(CapacityIndex, TakeAndGiveAreExact) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  CapacityIndex index(c.nodes);
  auto job = Job(1, 1, 3);
  auto placement = index.Place(job.tasks);
  ASSERT_TRUE(placement.has_value());
  index.Take(job.tasks, *placement);
  EXPECT_EQ(index.free_gpus(), 1);
  EXPECT_THAT(index.nodes()[0].free_gpus, ElementsAre(3));
  EXPECT_FALSE(index.Place(Job(2, 1, 2).tasks).has_value());
  index.Give(job.tasks, *placement);
  EXPECT_EQ(index.free_gpus(), 4);
  EXPECT_THAT(index.nodes()[0].free_gpus, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(index.nodes()[0].free, c.nodes[0].free);
}

}  // namespace
}  // namespace cohort::scheduler
