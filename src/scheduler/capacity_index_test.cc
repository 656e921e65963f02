#include "scheduler/capacity_index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

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

// Free resources and GPUs of every node, and where a few shapes of job would go: what a pass
// reads from an index.
struct Observed {
  std::vector<std::pair<int64_t, std::vector<int>>> nodes;
  // Per job shape: node and GPUs of each task, or nothing if it does not fit.
  std::vector<std::optional<std::vector<std::pair<std::string, std::vector<int>>>>> placements;
  bool operator==(const Observed&) const = default;
};

Observed Observe(const CapacityIndex& index) {
  Observed o;
  for (const auto& n : index.nodes()) o.nodes.emplace_back(n.free.gpus, n.free_gpus);
  for (int gpus : {1, 2, 3, 4, 8}) {
    for (int tasks : {1, 2, 5}) {
      auto placement = index.Place(Job(99, tasks, gpus).tasks);
      auto& seen = o.placements.emplace_back();
      if (!placement) continue;
      seen.emplace();
      for (const auto& p : *placement) seen->emplace_back(p.node_id, p.gpus);
    }
  }
  return o;
}

TEST(CapacityIndex, RollbackPutsBackExactlyWhatTheWhatIfChanged) {
  ClusterSnapshot c;
  AddNodes(c, "big", 6, 8);
  AddNodes(c, "small", 5, 4);
  Occupy(c, "big-1", 3);
  Occupy(c, "small-2", 4);
  CapacityIndex index(c.nodes);
  std::mt19937 random(7);
  for (int round = 0; round < 50; ++round) {
    Observed before = Observe(index);
    int64_t free_before = index.free_gpus();
    index.Mark();
    // A what-if: jobs placed and taken, some of them given back again.
    std::vector<std::pair<PendingJob, std::vector<TaskPlacement>>> taken;
    for (int j = 0; j < 6; ++j) {
      PendingJob job =
          Job(j, 1 + static_cast<int>(random() % 3), 1 + static_cast<int>(random() % 4));
      auto placement = index.Place(job.tasks);
      if (!placement) continue;
      index.Take(job.tasks, *placement);
      taken.emplace_back(job, *placement);
    }
    for (size_t t = 0; t < taken.size(); t += 2) index.Give(taken[t].first.tasks, taken[t].second);
    index.Rollback();
    EXPECT_EQ(index.free_gpus(), free_before) << "round " << round;
    EXPECT_TRUE(Observe(index) == before) << "round " << round;
    // Between what-ifs the pass changes the index for real; the next mark starts from there.
    PendingJob kept = Job(100 + round, 1, 1);
    if (auto p = index.Place(kept.tasks); p && round % 3 == 0) index.Take(kept.tasks, *p);
  }
}

TEST(CapacityIndex, ResetMakesTheSameIndexAsANewOne) {
  ClusterSnapshot first;
  AddNodes(first, "a", 3, 8);
  ClusterSnapshot second;
  AddNodes(second, "b", 4, 4);
  AddNodes(second, "c", 2, 8);
  Occupy(second, "c-0", 6);
  CapacityIndex reused(first.nodes);
  PendingJob job = Job(1, 2, 8);
  reused.Take(job.tasks, *reused.Place(job.tasks));
  reused.Reset(second.nodes);
  CapacityIndex fresh(second.nodes);
  EXPECT_EQ(reused.free_gpus(), fresh.free_gpus());
  EXPECT_EQ(reused.Find("a-0"), -1);
  EXPECT_EQ(reused.Find("c-1"), fresh.Find("c-1"));
  EXPECT_TRUE(Observe(reused) == Observe(fresh));
}

TEST(GpusMightFit, BigTasksEachNeedANodeOfTheirOwn) {
  auto nodes_with = [](std::vector<int64_t> free) {
    return [free](int64_t gpus) {
      return static_cast<size_t>(
          std::count_if(free.begin(), free.end(), [&](int64_t g) { return g >= gpus; }));
    };
  };
  std::vector<TaskRequest> two_fives = Job(1, 2, 5).tasks;
  // 13 GPUs free, 8 at most on a node: enough in all, but only one node holds a task of 5.
  EXPECT_FALSE(GpusMightFit(two_fives, 13, 8, nodes_with({8, 3, 2})));
  EXPECT_TRUE(GpusMightFit(two_fives, 13, 8, nodes_with({8, 5})));
  EXPECT_FALSE(GpusMightFit(two_fives, 9, 8, nodes_with({8, 1})));            // too few in all
  EXPECT_FALSE(GpusMightFit(Job(2, 1, 9).tasks, 16, 8, nodes_with({8, 8})));  // larger than any
  // Small tasks can share nodes: only the total counts.
  EXPECT_TRUE(GpusMightFit(Job(3, 4, 2).tasks, 8, 4, nodes_with({4, 4})));
}

}  // namespace
}  // namespace cohort::scheduler
