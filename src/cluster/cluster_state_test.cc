#include "cluster/cluster_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/builders.h"

namespace cohort::cluster {
namespace {

using cohort::testing::IdleNode;
using cohort::testing::Job;
using cohort::testing::Minutes;
using ::testing::ElementsAre;

const NodeCapacity& NodeIn(const ClusterSnapshot& s, const std::string& id) {
  for (const auto& n : s.nodes) {
    if (n.node_id == id) return n;
  }
  ADD_FAILURE() << "no node " << id;
  return s.nodes.front();
}

class ClusterStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_.UpsertNode(IdleNode("a", 4), true);
    state_.UpsertNode(IdleNode("b", 4), true);
  }
  ClusterState state_;
};

TEST_F(ClusterStateTest, ARemovedNodeIsForgottenAndTheOthersKeepTheirOrder) {
  state_.UpsertNode(IdleNode("c", 4), true);
  state_.RemoveNode("b");
  state_.RemoveNode("nope");  // ignored
  EXPECT_EQ(state_.FindNode("b"), nullptr);
  ClusterSnapshot s = state_.Snapshot();
  ASSERT_EQ(s.nodes.size(), 2u);
  EXPECT_EQ(s.nodes[0].node_id, "a");
  EXPECT_EQ(s.nodes[1].node_id, "c");
  EXPECT_FALSE(state_.Start(Job(1, 1, 1), {{"b", {0}}}, Minutes(1)));
  EXPECT_TRUE(state_.Start(Job(1, 1, 1), {{"c", {0}}}, Minutes(1)));
  EXPECT_EQ(NodeIn(state_.Snapshot(), "c").free_gpus, std::vector<int>({1, 2, 3}));
}

TEST_F(ClusterStateTest, StartTakesExactlyThePlacementAndReleaseGivesItBack) {
  PendingJob gang = Job(1, 2, 2);
  ASSERT_TRUE(state_.Start(gang, {{"a", {0, 1}}, {"b", {2, 3}}}, Minutes(1)));
  ClusterSnapshot s = state_.Snapshot();
  EXPECT_THAT(NodeIn(s, "a").free_gpus, ElementsAre(2, 3));
  EXPECT_THAT(NodeIn(s, "b").free_gpus, ElementsAre(0, 1));
  EXPECT_EQ(NodeIn(s, "a").free.milli_cpus, 63'000);
  ASSERT_EQ(s.running.size(), 1u);
  EXPECT_EQ(s.running[0].started_at, Minutes(1));
  EXPECT_EQ(state_.used_gpus(), 4);
  EXPECT_EQ(state_.team_gpus(gang.team), 4);
  EXPECT_EQ(state_.team_gpus("someone else"), 0);

  EXPECT_FALSE(state_.ReleaseTask(1, "worker", 0));
  EXPECT_EQ(state_.team_gpus(gang.team), 2);  // worker/1 still holds b's GPUs
  EXPECT_THAT(NodeIn(state_.Snapshot(), "a").free_gpus, ElementsAre(0, 1, 2, 3));
  EXPECT_TRUE(state_.ReleaseTask(1, "worker", 1));  // the job has left the cluster
  EXPECT_FALSE(state_.Holds(1));
  EXPECT_EQ(state_.used_gpus(), 0);
  EXPECT_EQ(state_.team_gpus(gang.team), 0);
  EXPECT_TRUE(state_.Snapshot().running.empty());
}

TEST_F(ClusterStateTest, APlacementThatNoLongerFitsIsRefusedWholeAndChangesNothing) {
  ASSERT_TRUE(state_.Start(Job(1, 1, 2), {{"a", {0, 1}}}, Minutes(0)));
  ClusterSnapshot before = state_.Snapshot();
  // GPU 1 of a is taken: the whole gang is refused, b keeps all its GPUs.
  EXPECT_FALSE(state_.Start(Job(2, 2, 2), {{"b", {0, 1}}, {"a", {1, 2}}}, Minutes(0)));
  // Two tasks of one gang cannot share a GPU either, nor can one task name a GPU twice.
  EXPECT_FALSE(state_.Start(Job(3, 2, 1), {{"b", {0}}, {"b", {0}}}, Minutes(0)));
  EXPECT_FALSE(state_.Start(Job(4, 1, 2), {{"b", {3, 3}}}, Minutes(0)));
  // Nor more CPUs than the node has, nor a node that does not exist, nor a job twice.
  PendingJob greedy = Job(5, 1, 1);
  greedy.tasks[0].resources.milli_cpus = 65'000;
  EXPECT_FALSE(state_.Start(greedy, {{"b", {0}}}, Minutes(0)));
  EXPECT_FALSE(state_.Start(Job(6, 1, 1), {{"nowhere", {0}}}, Minutes(0)));
  EXPECT_FALSE(state_.Start(Job(1, 1, 1), {{"b", {0}}}, Minutes(0)));
  ClusterSnapshot after = state_.Snapshot();
  EXPECT_EQ(NodeIn(after, "b").free_gpus, NodeIn(before, "b").free_gpus);
  EXPECT_EQ(NodeIn(after, "a").free_gpus, NodeIn(before, "a").free_gpus);
  EXPECT_EQ(after.running.size(), 1u);
}

TEST_F(ClusterStateTest, NodesThatAreNotReadyAreLeftOutButKeepWhatTheirTasksHold) {
  ASSERT_TRUE(state_.Start(Job(1, 1, 4), {{"a", {0, 1, 2, 3}}}, Minutes(0)));
  state_.SetReady("a", false);
  ClusterSnapshot s = state_.Snapshot();
  ASSERT_EQ(s.nodes.size(), 1u);
  EXPECT_EQ(s.nodes[0].node_id, "b");
  EXPECT_EQ(s.running.size(), 1u);
  EXPECT_FALSE(state_.Start(Job(2, 1, 1), {{"a", {0}}}, Minutes(0))) << "nothing new goes there";
  state_.SetReady("a", true);
  EXPECT_TRUE(NodeIn(state_.Snapshot(), "a").free_gpus.empty());
}

TEST_F(ClusterStateTest, JobsOnANodeAreThoseWithATaskThere) {
  ASSERT_TRUE(state_.Start(Job(1, 2, 2), {{"a", {0, 1}}, {"b", {0, 1}}}, Minutes(0)));
  ASSERT_TRUE(state_.Start(Job(2, 1, 2), {{"b", {2, 3}}}, Minutes(0)));
  ASSERT_TRUE(state_.Start(Job(3, 1, 1), {{"a", {2}}}, Minutes(0)));
  EXPECT_THAT(state_.JobsOn("a"), ElementsAre(1, 3));
  EXPECT_THAT(state_.JobsOn("b"), ElementsAre(1, 2));
  EXPECT_TRUE(state_.JobsOn("nowhere").empty());
  // A task that has ended no longer ties its job to the node.
  state_.ReleaseTask(1, "worker", 0);
  EXPECT_THAT(state_.JobsOn("a"), ElementsAre(3));
}

TEST_F(ClusterStateTest, ANodeThatComesBackSmallerNeverInventsGpus) {
  ASSERT_TRUE(state_.Start(Job(1, 1, 4), {{"a", {0, 1, 2, 3}}}, Minutes(0)));
  state_.UpsertNode(IdleNode("a", 2), true);  // registers again with 2 GPUs
  EXPECT_TRUE(NodeIn(state_.Snapshot(), "a").free_gpus.empty());
  EXPECT_EQ(state_.used_gpus(), 2);
  EXPECT_EQ(state_.team_gpus(Job(1, 1, 4).team), 2);
  EXPECT_TRUE(state_.ReleaseTask(1, "worker", 0));
  ClusterSnapshot s = state_.Snapshot();
  const NodeCapacity& a = NodeIn(s, "a");
  EXPECT_THAT(a.free_gpus, ElementsAre(0, 1));
  EXPECT_EQ(a.free, a.total);
  // ...and nodes keep the order they were first added in.
  EXPECT_EQ(state_.Snapshot().nodes.front().node_id, "a");
}

TEST_F(ClusterStateTest, ApplyChecksEachPartAndReportsWhatItDid) {
  std::vector<PendingJob> pending = {Job(1, 1, 4), Job(2, 1, 4), Job(3, 1, 1)};
  Plan plan;
  plan.placements = {{1, {{"a", {0, 1, 2, 3}}}},
                     {2, {{"a", {0, 1, 2, 3}}}},  // the same GPUs again: refused
                     {9, {{"b", {0}}}}};          // not a pending job: refused
  Applied applied = state_.Apply(plan, pending, Minutes(2));
  ASSERT_EQ(applied.placements.size(), 1u);
  EXPECT_EQ(applied.placements[0].job_id, 1);
  EXPECT_FALSE(applied.consistent);
  EXPECT_TRUE(state_.Holds(1));
  EXPECT_FALSE(state_.Holds(2));
}

TEST_F(ClusterStateTest, APreemptionMakesAClaimThatLastsOnePassAfterItsVictimsAreGone) {
  ASSERT_TRUE(state_.Start(Job(1, 1, 4), {{"a", {0, 1, 2, 3}}}, Minutes(0)));
  std::vector<PendingJob> pending = {Job(2, 1, 4)};
  Plan plan;
  plan.preemptions = {{1, 2, "preempted by job 2"}, {1, 2, "twice"}, {7, 2, "not running"}};
  Applied applied = state_.Apply(plan, pending, Minutes(5));
  ASSERT_EQ(applied.preemptions.size(), 1u) << "a victim is stopped once; unknown ones never";
  EXPECT_TRUE(state_.FindJob(1)->stopping);
  EXPECT_EQ(state_.FindJob(1)->stopping_for, 2);
  EXPECT_TRUE(state_.Claimed(2));
  // While the victim stops, the claim holds.
  state_.Apply(Plan{}, pending, Minutes(6));
  EXPECT_TRUE(state_.Claimed(2));
  // The victim is gone: the claim holds for one more pass, then ends.
  EXPECT_TRUE(state_.ReleaseTask(1, "worker", 0));
  EXPECT_TRUE(state_.Claimed(2));
  state_.Apply(Plan{}, pending, Minutes(7));
  EXPECT_FALSE(state_.Claimed(2));
}

TEST_F(ClusterStateTest, AClaimEndsWhenItsJobStartsOrNoLongerWaits) {
  ASSERT_TRUE(state_.Start(Job(1, 1, 4), {{"a", {0, 1, 2, 3}}}, Minutes(0)));
  Plan plan;
  plan.preemptions = {{1, 2, "for 2"}};
  state_.Apply(plan, {Job(2, 1, 4), Job(3, 1, 1)}, Minutes(5));
  ASSERT_TRUE(state_.Claimed(2));
  state_.Apply(Plan{}, {Job(3, 1, 1)}, Minutes(6));  // job 2 was killed while pending
  EXPECT_FALSE(state_.Claimed(2));
}

TEST_F(ClusterStateTest, ElasticJobsGrowWithTheSameCheckAndLeavingReplicasStopOnTheirOwn) {
  PendingJob elastic = Job(1, 1, 1);
  elastic.elastic = {RunningJob::ElasticGroup{"worker", 1, 4, elastic.tasks[0].resources, 1}};
  ASSERT_TRUE(state_.Start(elastic, {{"a", {0}}}, Minutes(0)));
  Growth grow{1,
              {TaskRequest{"worker", 1, elastic.tasks[0].resources},
               TaskRequest{"worker", 2, elastic.tasks[0].resources}},
              {{"a", {1}}, {"a", {2}}}};
  ASSERT_TRUE(state_.Grow(grow, Minutes(3)));
  EXPECT_FALSE(state_.Grow(grow, Minutes(3))) << "the same GPUs twice";
  const RunningJob* r = state_.FindJob(1);
  ASSERT_EQ(r->tasks.size(), 3u);
  EXPECT_EQ(r->elastic[0].next_index, 3);
  EXPECT_EQ(r->task_started[2], Minutes(3));

  state_.MarkLeaving(1, "worker", {2});
  ClusterSnapshot s = state_.Snapshot();
  ASSERT_EQ(s.running.size(), 2u);
  EXPECT_FALSE(s.running[0].stopping);
  EXPECT_EQ(s.running[0].tasks.size(), 2u);
  EXPECT_TRUE(s.running[1].stopping);
  ASSERT_EQ(s.running[1].tasks.size(), 1u);
  EXPECT_EQ(s.running[1].tasks[0].index, 2);
  EXPECT_FALSE(state_.ReleaseTask(1, "worker", 2));
  EXPECT_EQ(state_.Snapshot().running.size(), 1u);
  EXPECT_THAT(NodeIn(state_.Snapshot(), "a").free_gpus, ElementsAre(2, 3));

  // A replica that ends on its own (it finished) ends the job's growing: the others finish too.
  EXPECT_FALSE(state_.ReleaseTask(1, "worker", 1));
  EXPECT_TRUE(state_.FindJob(1)->elastic.empty());
  EXPECT_FALSE(state_.AnyElasticCanGrow());

  // A stopping job does not grow.
  state_.MarkStopping(1);
  EXPECT_FALSE(state_.Grow(Growth{1, {grow.tasks[1]}, {{"a", {3}}}}, Minutes(4)));
}

TEST_F(ClusterStateTest, APlacementWithTwoReplicasOfAGroupWithDistinctNodesOnOneNodeIsRefused) {
  PendingJob apart = Job(1, 2, 1);
  for (auto& t : apart.tasks) t.distinct_nodes = true;
  EXPECT_FALSE(state_.Start(apart, {{"a", {0}}, {"a", {1}}}, Minutes(0)));
  EXPECT_FALSE(state_.Holds(1));
  EXPECT_THAT(NodeIn(state_.Snapshot(), "a").free_gpus, ElementsAre(0, 1, 2, 3));

  // Through Apply, as a plan made elsewhere would come: refused, and the plan is not consistent.
  Plan plan;
  plan.placements = {{1, {{"a", {0}}, {"a", {1}}}}};
  Applied applied = state_.Apply(plan, {apart}, Minutes(0));
  EXPECT_TRUE(applied.placements.empty());
  EXPECT_FALSE(applied.consistent);
  EXPECT_FALSE(state_.Holds(1));

  // The same placement of a job without the rule is fine; the job with it, on two nodes, too.
  EXPECT_TRUE(state_.Start(Job(2, 2, 1), {{"a", {0}}, {"a", {1}}}, Minutes(0)));
  plan.placements = {{1, {{"a", {2}}, {"b", {0}}}}};
  applied = state_.Apply(plan, {apart}, Minutes(0));
  ASSERT_EQ(applied.placements.size(), 1u);
  EXPECT_TRUE(applied.consistent);
  EXPECT_TRUE(state_.Holds(1));
}

TEST_F(ClusterStateTest, AGroupWithDistinctNodesGrowsOnlyWhereNoneOfItsReplicasIs) {
  state_.UpsertNode(IdleNode("c", 4), true);
  PendingJob elastic = Job(1, 1, 1);
  elastic.tasks[0].distinct_nodes = true;
  const Resources one_gpu = elastic.tasks[0].resources;
  elastic.elastic = {RunningJob::ElasticGroup{"worker", 1, 4, one_gpu, 1, true}};
  ASSERT_TRUE(state_.Start(elastic, {{"a", {0}}}, Minutes(0)));
  // The growth need not say distinct_nodes: the job's own records do.
  TaskRequest second{"worker", 1, one_gpu};
  TaskRequest third{"worker", 2, one_gpu};
  EXPECT_FALSE(state_.Grow(Growth{1, {second}, {{"a", {1}}}}, Minutes(1))) << "beside worker/0";
  EXPECT_FALSE(state_.Grow(Growth{1, {second, third}, {{"b", {0}}, {"b", {1}}}}, Minutes(1)))
      << "two new ones on one node";
  ASSERT_TRUE(state_.Grow(Growth{1, {second}, {{"b", {0}}}}, Minutes(1)));
  EXPECT_TRUE(state_.FindJob(1)->tasks[1].distinct_nodes);

  // A replica on its way out still runs where it is.
  state_.MarkLeaving(1, "worker", {1});
  Plan plan;
  plan.growths = {Growth{1, {third}, {{"b", {1}}}}};
  Applied applied = state_.Apply(plan, {}, Minutes(2));
  EXPECT_TRUE(applied.growths.empty());
  EXPECT_FALSE(applied.consistent);
  EXPECT_TRUE(state_.Grow(Growth{1, {third}, {{"c", {0}}}}, Minutes(2)));
  EXPECT_EQ(state_.FindJob(1)->tasks.size(), 3u);

  // A group without the rule grows beside its replicas, as before.
  PendingJob packed = Job(2, 1, 1);
  packed.elastic = {RunningJob::ElasticGroup{"worker", 1, 4, one_gpu, 1}};
  ASSERT_TRUE(state_.Start(packed, {{"c", {1}}}, Minutes(0)));
  EXPECT_TRUE(state_.Grow(Growth{2, {second}, {{"c", {2}}}}, Minutes(1)));
}

TEST_F(ClusterStateTest, RestoreRebuildsFromRecordsAndTakesWhatTheyHold) {
  RunningJob r = cluster::RunningFrom(Job(4, 2, 2), {{"a", {2, 3}}, {"gone", {0, 1}}}, Minutes(0));
  state_.Restore(r);
  EXPECT_THAT(NodeIn(state_.Snapshot(), "a").free_gpus, ElementsAre(0, 1));
  EXPECT_EQ(state_.used_gpus(), 2) << "a node it does not know holds nothing";
  // The node registers later: its share is taken then.
  state_.UpsertNode(IdleNode("gone", 2), true);
  EXPECT_TRUE(NodeIn(state_.Snapshot(), "gone").free_gpus.empty());
  EXPECT_EQ(state_.used_gpus(), 4);
}

}  // namespace
}  // namespace cohort::cluster
