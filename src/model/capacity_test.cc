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

}  // namespace
}  // namespace cohort
