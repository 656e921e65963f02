#include <gtest/gtest.h>

#include <memory>

#include "model/plan.h"

namespace cohort {
namespace {

NodeCapacity Node(std::string id, std::string model, std::string rack, std::vector<int> free) {
  NodeCapacity n;
  n.node_id = std::move(id);
  n.total = Resources{8, 64'000, int64_t{256} << 30};
  n.free = Resources{static_cast<int64_t>(free.size()), 32'000, int64_t{128} << 30};
  n.free_gpus = std::move(free);
  n.gpu_model = std::move(model);
  n.labels = {{"rack", std::move(rack)}};
  return n;
}

TEST(CopyCapacity, GivesWhatAssignmentGivesIntoAnEmptyNode) {
  NodeCapacity from = Node("n1", "H100", "r1", {0, 3, 5});
  from.topology = std::make_shared<const GpuTopology>(GpuTopology{{{{0, 1}, {2, 3}}}});
  NodeCapacity to;
  CopyCapacity(from, to);
  EXPECT_EQ(to, from);
  EXPECT_EQ(to.topology, from.topology) << "the topology is shared, not copied";
}

TEST(CopyCapacity, ReplacesEveryFieldThatDiffers) {
  NodeCapacity from = Node("n2", "A100", "r2", {1});
  NodeCapacity to = Node("n1", "H100", "r1", {0, 3, 5, 7});
  to.labels["zone"] = "west";
  to.topology = std::make_shared<const GpuTopology>();
  CopyCapacity(from, to);
  EXPECT_EQ(to, from);
  EXPECT_EQ(to.labels.size(), 1u) << "labels the source lacks go";
  EXPECT_EQ(to.topology, nullptr);
}

TEST(CopyCapacity, TheSameNodeWithNewLabelsGetsThem) {
  // A node that registers again keeps its id; what else it reports may have changed.
  NodeCapacity to = Node("n1", "H100", "r1", {0, 1});
  NodeCapacity from = to;
  from.labels["rack"] = "r9";
  from.free_gpus = {1};
  from.free.gpus = 1;
  CopyCapacity(from, to);
  EXPECT_EQ(to.labels.at("rack"), "r9");
  EXPECT_EQ(to, from);
}

TEST(DistinctNodes, OnlyTwoReplicasOfOneGroupThatWantsNodesApartMayNotShareOne) {
  TaskRequest worker0{"worker", 0, Resources{1, 1000, 0}, true};
  TaskRequest worker1{"worker", 1, Resources{1, 1000, 0}, true};
  TaskRequest node0{"node", 0, Resources{1, 1000, 0}, true};
  TaskRequest launcher{"launcher", 0, Resources{0, 1000, 0}};
  TaskRequest plain0{"plain", 0, Resources{1, 1000, 0}};
  TaskRequest plain1{"plain", 1, Resources{1, 1000, 0}};
  EXPECT_FALSE(MayShareNode(worker0, worker1));
  EXPECT_TRUE(MayShareNode(worker0, node0)) << "replicas of another group";
  EXPECT_TRUE(MayShareNode(worker0, launcher));
  EXPECT_TRUE(MayShareNode(plain0, plain1)) << "a group without distinct_nodes packs";

  EXPECT_FALSE(AnyOnDistinctNodes({plain0, plain1, launcher}));
  EXPECT_TRUE(AnyOnDistinctNodes({plain0, worker1}));

  std::vector<TaskRequest> job = {worker0, worker1, node0, launcher};
  EXPECT_TRUE(KeepsDistinctNodes(job, {{"a", {0}}, {"b", {0}}, {"a", {1}}, {"a", {}}}));
  EXPECT_TRUE(KeepsDistinctNodes(job, {{"a", {0}}, {"b", {0}}, {"b", {1}}, {"b", {}}}))
      << "node/0 and the launcher beside worker/1";
  EXPECT_FALSE(KeepsDistinctNodes(job, {{"b", {0}}, {"b", {1}}, {"a", {0}}, {"a", {}}}))
      << "worker/0 and worker/1 on b";
  EXPECT_TRUE(KeepsDistinctNodes({plain0, plain1}, {{"a", {0}}, {"a", {1}}}));
}

}  // namespace
}  // namespace cohort
