#include "scheduler/capacity_index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/builders.h"

namespace cohort::scheduler {
namespace {

using ::testing::ElementsAre;
using namespace testing;  // NOLINT: the builders
using testing::Job;       // not cohort::Job

TEST(CapacityIndex, CpuOnlyTasksPreferNodesWithoutFreeGpus) {
  ClusterSnapshot c;
  AddNodes(c, "idle", 1, 8);
  AddNodes(c, "full", 1, 8);
  Occupy(c, "full-0", 8);
  CapacityIndex index(c.nodes);
  PendingJob cpu = Job(1, 1, 0);
  auto placement = index.Place(cpu.tasks);
  ASSERT_TRUE(placement);
  EXPECT_EQ((*placement)[0].node_id, "full-0") << "keep the idle GPU node whole";
}

TEST(CapacityIndex, RejectsQuicklyWhenTooFewGpusAreFree) {
  ClusterSnapshot c;
  AddNodes(c, "n", 3, 8);
  Occupy(c, "n-0", 5);
  Occupy(c, "n-1", 5);
  Occupy(c, "n-2", 5);
  CapacityIndex index(c.nodes);
  EXPECT_EQ(index.free_gpus(), 9);
  EXPECT_EQ(index.largest_free_block(), 3);
  EXPECT_FALSE(index.Place(Job(1, 1, 4).tasks));  // no node has 4
  EXPECT_FALSE(index.Place(Job(2, 5, 2).tasks));  // 10 > 9 free
  auto spread = index.Place(Job(3, 3, 3).tasks);  // exactly fills the three gaps
  ASSERT_TRUE(spread);
  EXPECT_EQ(NodesOf(JobPlacement{3, *spread}).size(), 3u);
}

TEST(CapacityIndex, PartialTakeSkipsWhatIsAlreadyTaken) {
  ClusterSnapshot c;
  AddNodes(c, "n", 1, 4);
  CapacityIndex index(c.nodes);
  PendingJob a = Job(1, 1, 2);
  index.Take(a.tasks, {TaskPlacement{"n-0", {0, 1}}});
  // A reservation over GPUs 0-3 takes only the two that are still free.
  PendingJob r = Job(2, 1, 4);
  index.Take(r.tasks, {TaskPlacement{"n-0", {0, 1, 2, 3}}}, /*partial=*/true);
  EXPECT_EQ(index.free_gpus(), 0);
  EXPECT_THAT(index.nodes()[0].free_gpus, ElementsAre());
}

}  // namespace
}  // namespace cohort::scheduler
