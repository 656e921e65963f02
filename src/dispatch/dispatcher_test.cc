#include "dispatch/dispatcher.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace cohort::dispatch {
namespace {

using cohort::testing::IdleNode;
using cohort::testing::Job;
using cohort::testing::Minutes;

class DispatcherTest : public ::testing::Test {
 protected:
  DispatcherTest() : dispatcher_(scheduler::NewScheduler(), /*incremental_above=*/2) {
    cluster_.UpsertNode(IdleNode("a", 4), true);
    cluster_.UpsertNode(IdleNode("b", 4), true);
  }
  cluster::ClusterState cluster_;
  Dispatcher dispatcher_;
};

TEST_F(DispatcherTest, AFullPassAppliesItsPlanToTheCluster) {
  std::vector<PendingJob> pending = {Job(1, 2, 4), Job(2, 1, 1)};
  PassResult pass = dispatcher_.FullPass(cluster_, pending, Minutes(0));
  ASSERT_TRUE(pass.ran);
  EXPECT_EQ(pass.applied.placements.size(), 1u);
  EXPECT_TRUE(cluster_.Holds(1));
  ASSERT_EQ(pass.waiting.size(), 1u);
  EXPECT_EQ(pass.waiting[0].job_id, 2);
  EXPECT_EQ(cluster_.used_gpus(), 8);
  EXPECT_FALSE(dispatcher_.full_pass_due());
}

TEST_F(DispatcherTest, NothingToDoRunsNoPass) {
  std::vector<PendingJob> none;
  EXPECT_FALSE(dispatcher_.FullPass(cluster_, none, Minutes(0)).ran);
}

TEST_F(DispatcherTest, BetweenPassesArrivalsAndReleasesAreDecidedAgainstTheResidue) {
  std::vector<PendingJob> pending = {Job(1, 1, 4), Job(2, 1, 4), Job(3, 1, 4)};
  dispatcher_.FullPass(cluster_, pending, Minutes(0));
  ASSERT_TRUE(cluster_.Holds(1) && cluster_.Holds(2));
  ASSERT_TRUE(dispatcher_.Incremental(1 + 1));
  // An arrival that does not fit waits, and a full pass becomes due.
  std::string reason;
  EXPECT_FALSE(dispatcher_.Arrive(cluster_, Job(4, 1, 1), Minutes(1), &reason));
  EXPECT_FALSE(reason.empty());
  EXPECT_TRUE(dispatcher_.full_pass_due());
  // Job 1 ends: the first waiting job in the pass's order (3) starts on what it held.
  const RunningJob one = *cluster_.FindJob(1);
  ASSERT_TRUE(cluster_.ReleaseTask(1, "worker", 0));
  std::map<JobId, PendingJob> waiting = {{3, Job(3, 1, 4)}, {4, Job(4, 1, 1)}};
  auto started = dispatcher_.Released(
      cluster_, "default", one.tasks, one.placement,
      [&](JobId id) -> const PendingJob* {
        auto it = waiting.find(id);
        return it == waiting.end() ? nullptr : &it->second;
      },
      Minutes(2));
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].job_id, 3);
  EXPECT_TRUE(cluster_.Holds(3));
}

TEST_F(DispatcherTest, ADecisionTheClusterRefusesInvalidatesTheResidue) {
  std::vector<PendingJob> pending = {Job(1, 1, 4), Job(2, 1, 8)};
  dispatcher_.FullPass(cluster_, pending, Minutes(0));
  ASSERT_TRUE(dispatcher_.Incremental(2));
  // Node b goes away behind the residue's back: the arrival it would place there is refused.
  cluster_.SetReady("b", false);
  std::string reason;
  EXPECT_FALSE(dispatcher_.Arrive(cluster_, Job(3, 1, 2), Minutes(1), &reason));
  EXPECT_FALSE(cluster_.Holds(3));
  EXPECT_FALSE(dispatcher_.Incremental(100));
  EXPECT_TRUE(dispatcher_.full_pass_due());
}

}  // namespace
}  // namespace cohort::dispatch
