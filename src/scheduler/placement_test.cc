// Topology-aware GPU choice, fewest racks, and constraints on GPU model, labels and the nodes a
// job is kept off.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/capacity_index.h"
#include "scheduler/scheduler.h"
#include "testing/builders.h"

namespace cohort::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

// An 8-GPU node in NVLink pairs (0-1, 2-3, 4-5, 6-7); each half of the machine behind its own
// PCIe switch, as the fake NVML library describes it.
std::shared_ptr<const GpuTopology> PairedTopology() {
  NodeInfo info;
  for (int i = 0; i < 8; ++i) info.gpus.push_back(Gpu{i, "", "H100", 0, "", i / 4});
  for (int a = 0; a < 8; ++a) {
    for (int b = a + 1; b < 8; ++b) {
      GpuLinkType type = b == a + 1 && a % 2 == 0 ? GpuLinkType::kNvLink
                         : a / 4 == b / 4         ? GpuLinkType::kPcieSwitch
                                                  : GpuLinkType::kSystem;
      info.gpu_links.push_back(GpuLink{a, b, type, type == GpuLinkType::kNvLink ? 2 : 0});
    }
  }
  return std::make_shared<GpuTopology>(info.Topology());
}

TEST(Topology, GroupsByLinkLevel) {
  auto t = PairedTopology();
  ASSERT_EQ(t->levels.size(), 3u);
  EXPECT_EQ(t->levels[0].size(), 4u);  // NVLink pairs
  EXPECT_THAT(t->levels[0][1], ElementsAre(2, 3));
  EXPECT_EQ(t->levels[1].size(), 2u);  // two PCIe switches
  EXPECT_THAT(t->levels[1][0], ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(t->levels[2].size(), 2u);  // no host-bridge links: the sockets stay apart
}

TEST(Topology, TaskGetsAWholeNvLinkPairAndSinglesFillBrokenPairs) {
  NodeCapacity node;
  node.node_id = "n";
  node.topology = PairedTopology();
  node.free_gpus = {0, 2, 4, 5, 6, 7};  // 1 and 3 are busy: pairs 0-1 and 2-3 are broken
  EXPECT_THAT(PickGpus(node, 2, {}), ElementsAre(4, 5));
  EXPECT_THAT(PickGpus(node, 1, {}), ElementsAre(0)) << "keep whole pairs for pairs";
  EXPECT_THAT(PickGpus(node, 4, {}), ElementsAre(4, 5, 6, 7)) << "one PCIe switch";
  EXPECT_THAT(PickGpus(node, 2, {4, 5}), ElementsAre(6, 7));
  // No single group holds 5: any free GPUs.
  EXPECT_EQ(PickGpus(node, 5, {}).size(), 5u);
}

TEST(Racks, GangUsesFewestRacks) {
  ClusterSnapshot c;
  AddNodes(c, "a", 2, 8);
  AddNodes(c, "b", 2, 8);
  c.nodes[0].labels = {{"rack", "r1"}};
  c.nodes[1].labels = {{"rack", "r2"}};
  c.nodes[2].labels = {{"rack", "r1"}};
  c.nodes[3].labels = {{"rack", "r2"}};
  // Two whole nodes: a-0 (r1) and then b-0 (r1), not a-1 (r2).
  Plan plan = RunScheduler(c, {Job(1, 2, 8)});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(NodesOf(plan.placements[0]), (std::set<std::string>{"a-0", "b-0"}));
}

TEST(Constraints, OnlyMatchingNodesAndClearReasonsOtherwise) {
  ClusterSnapshot c;
  AddNodes(c, "a100", 2, 8);
  AddNodes(c, "h100", 1, 8);
  for (auto& n : c.nodes) {
    n.gpu_model = n.node_id.starts_with("h100") ? "H100" : "A100";
    n.labels = {{"zone", n.node_id == "a100-1" ? "west" : "east"}};
  }
  PendingJob h = Job(1, 1, 4);
  h.constraints.gpu_model = "H100";
  PendingJob west = Job(2, 1, 4);
  west.constraints.labels = {{"zone", "west"}};
  PendingJob nowhere = Job(3, 1, 1);
  nowhere.constraints.gpu_model = "B200";
  PendingJob too_big = Job(4, 2, 8);
  too_big.constraints.gpu_model = "H100";
  Plan plan = RunScheduler(c, {h, west, nowhere, too_big});
  ASSERT_EQ(plan.placements.size(), 2u);
  EXPECT_EQ(plan.placements[0].tasks[0].node_id, "h100-0");
  EXPECT_EQ(plan.placements[1].tasks[0].node_id, "a100-1");
  EXPECT_THAT(ReasonFor(plan, 3)->reason, HasSubstr("no ready node has GPU model B200"));
  EXPECT_TRUE(ReasonFor(plan, 3)->unschedulable);
  EXPECT_THAT(ReasonFor(plan, 4)->reason, HasSubstr("the nodes that meet its constraints have"));
}

// Nodes whose caches hold a job's datasets (Constraints::preferred_nodes, docs/data.md): the job
// goes there when they can hold it, even where another node would be a tighter fit, and
// anywhere else when they cannot: a preference, never a restriction.
TEST(PreferredNodes, AJobGoesWhereItsDatasetsAreWhenItFitsThereAndElsewhereWhenNot) {
  ClusterSnapshot c;
  AddNodes(c, "n", 3, 8);
  Occupy(c, "n-0", 4);  // n-0, with 4 free, is the tightest fit for 4 GPUs
  PendingJob job = Job(1, 1, 4);
  Plan plan = RunScheduler(c, {job});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].tasks[0].node_id, "n-0") << "best fit without a preference";

  job.constraints.preferred_nodes = {"n-2"};
  plan = RunScheduler(c, {job});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].tasks[0].node_id, "n-2");

  // A gang of two 8-GPU tasks: the preferred node and the first other one that holds 8.
  PendingJob gang = Job(2, 2, 8);
  gang.constraints.preferred_nodes = {"n-2"};
  plan = RunScheduler(c, {gang});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(NodesOf(plan.placements[0]), (std::set<std::string>{"n-1", "n-2"}));

  // The preferred node is too busy: the job starts elsewhere at once, rather than wait for it.
  Occupy(c, "n-2", 6);
  plan = RunScheduler(c, {job});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].tasks[0].node_id, "n-0");
}

// A job the master keeps off nodes (their GPUs it left idle, or where a task of it could not
// start: docs/reliability.md) goes elsewhere, or waits, saying so, and is not called
// unschedulable (an exclusion for idle GPUs ends).
TEST(Constraints, ExcludedNodesAreNotUsedAndAJobOnlyTheyCouldHoldWaitsSayingSo) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 1);
  PendingJob elsewhere = Job(1, 1, 1);
  elsewhere.constraints.excluded_nodes = {"n-0"};
  Plan plan = RunScheduler(c, {elsewhere});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].tasks[0].node_id, "n-1");

  PendingJob kept_off = Job(2, 1, 1);
  kept_off.constraints.excluded_nodes = {"n-0", "n-1"};
  plan = RunScheduler(c, {kept_off});
  EXPECT_TRUE(plan.placements.empty());
  ASSERT_NE(ReasonFor(plan, 2), nullptr);
  EXPECT_EQ(ReasonFor(plan, 2)->reason,
            "waits: it is kept off nodes n-0, n-1 for now, and no other ready node could hold it");
  EXPECT_FALSE(ReasonFor(plan, 2)->unschedulable);

  // Other constraints still decide what could hold it: a job only n-1 could ever hold waits for
  // the exclusion of n-1 alone.
  c.nodes[1].labels = {{"zone", "west"}};
  PendingJob west = Job(3, 1, 1);
  west.constraints.labels = {{"zone", "west"}};
  west.constraints.excluded_nodes = {"n-1"};
  plan = RunScheduler(c, {west});
  EXPECT_TRUE(plan.placements.empty());
  EXPECT_EQ(ReasonFor(plan, 3)->reason,
            "waits: it is kept off node n-1 for now, and no other ready node could hold it");
}

// Every replica of `job` needs a node of its own (TaskGroupSpec::distinct_nodes).
PendingJob Apart(PendingJob job) {
  for (auto& t : job.tasks) t.distinct_nodes = true;
  return job;
}

TEST(DistinctNodes, AGangWhoseReplicasNeedANodeEachWaitsForAsManyNodes) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 8);
  // Without the rule, three 1-GPU replicas pack onto one node.
  Plan plan = RunScheduler(c, {Job(1, 3, 1)});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(NodesOf(plan.placements[0]).size(), 1u);

  // With it, two nodes that could hold all three are not enough, and it waits, saying why.
  plan = RunScheduler(c, {Apart(Job(1, 3, 1))});
  EXPECT_TRUE(plan.placements.empty());
  ASSERT_NE(ReasonFor(plan, 1), nullptr);
  EXPECT_EQ(ReasonFor(plan, 1)->reason,
            "unschedulable: needs 3 distinct nodes for worker (distinct_nodes: one replica on "
            "each), but only 2 ready nodes can hold one");
  EXPECT_TRUE(ReasonFor(plan, 1)->unschedulable);

  // A third node that cannot hold a replica (2 GPUs each) does not count.
  AddNodes(c, "small", 1, 1);
  plan = RunScheduler(c, {Apart(Job(1, 3, 2))});
  EXPECT_TRUE(plan.placements.empty());
  EXPECT_THAT(ReasonFor(plan, 1)->reason, HasSubstr("only 2 ready nodes can hold one"));

  // Nor one that does not meet the job's constraints.
  AddNodes(c, "m", 1, 8);
  for (auto& n : c.nodes) n.gpu_model = n.node_id.starts_with("m") ? "A100" : "H100";
  PendingJob h100 = Apart(Job(1, 3, 2));
  h100.constraints.gpu_model = "H100";
  plan = RunScheduler(c, {h100});
  EXPECT_TRUE(plan.placements.empty());
  EXPECT_THAT(ReasonFor(plan, 1)->reason,
              HasSubstr("only 2 ready nodes that meet its constraints can hold one"));
  EXPECT_TRUE(ReasonFor(plan, 1)->unschedulable);

  // With a third node that can, it starts, one replica on each.
  plan = RunScheduler(c, {Apart(Job(1, 3, 2))});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(NodesOf(plan.placements[0]), (std::set<std::string>{"n-0", "n-1", "m-0"}));
}

TEST(DistinctNodes, AGangThatWaitsForRoomSaysHowFewNodesHaveRoomForOneReplica) {
  ClusterSnapshot c;
  AddNodes(c, "n", 3, 8);
  Occupy(c, "n-2", 8);
  Plan plan = RunScheduler(c, {Apart(Job(1, 3, 1))});
  EXPECT_TRUE(plan.placements.empty());
  ASSERT_NE(ReasonFor(plan, 1), nullptr);
  EXPECT_FALSE(ReasonFor(plan, 1)->unschedulable) << "n-2 is busy, not missing";
  EXPECT_THAT(ReasonFor(plan, 1)->reason,
              HasSubstr("; its 3 worker replicas need a node each (distinct_nodes), and 2 nodes "
                        "have room for one"));
  // The same gang without the rule starts (on one node), and another gang's reason is as it was.
  plan = RunScheduler(c, {Job(1, 3, 1), Job(2, 3, 8)});
  EXPECT_THAT(PlacedIds(plan), ElementsAre(1));
  EXPECT_THAT(ReasonFor(plan, 2)->reason, Not(HasSubstr("distinct_nodes")));
}

TEST(DistinctNodes, ReplicasApartStillTakeTheNodesTheyFillMostTightly) {
  ClusterSnapshot c;
  AddNodes(c, "n", 4, 8);
  Occupy(c, "n-1", 7);
  Occupy(c, "n-3", 7);
  // Two 1-GPU replicas: the odd GPUs of n-1 and n-3, leaving n-0 and n-2 whole for 8-GPU gangs.
  Plan plan = RunScheduler(c, {Apart(Job(1, 2, 1))});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(NodesOf(plan.placements[0]), (std::set<std::string>{"n-1", "n-3"}));
}

TEST(DistinctNodes, OnlyReplicasOfTheSameGroupAreKeptApart) {
  ClusterSnapshot c;
  AddNodes(c, "n", 2, 4);
  // Two groups with distinct_nodes and a launcher without: each node gets one replica of each
  // group, and the launcher shares a node with them.
  PendingJob job = Apart(Job(1, 2, 2));
  for (int i = 0; i < 2; ++i)
    job.tasks.push_back(TaskRequest{"node", i, Resources{2, 1000, kGi}, true});
  job.tasks.push_back(TaskRequest{"launcher", 0, Resources{0, 1000, kGi}});
  // Another job's replicas apart may share nodes with this one's.
  Plan plan = RunScheduler(c, {job, Apart(Job(2, 2, 0))});
  ASSERT_EQ(plan.placements.size(), 2u);
  const JobPlacement& p = plan.placements[0];
  ASSERT_EQ(p.tasks.size(), 5u);
  EXPECT_NE(p.tasks[0].node_id, p.tasks[1].node_id);
  EXPECT_NE(p.tasks[2].node_id, p.tasks[3].node_id);
  EXPECT_NE(plan.placements[1].tasks[0].node_id, plan.placements[1].tasks[1].node_id);
}

}  // namespace
}  // namespace cohort::scheduler
