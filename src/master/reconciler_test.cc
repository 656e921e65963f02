// The reconciler alone: the master's parts wired as master.cc wires them over an in-memory store
// (master_parts_test_fixture.h), driven by hand-written agent registrations and reports.
#include "master/reconciler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "master/master_parts_test_fixture.h"

namespace cohort::master {
namespace {

using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

using ReconcilerTest = MasterPartsTest;
using cohort::testing::FailingStateStore;

TEST_F(ReconcilerTest, ASyncThatSaysEveryTaskRunsMovesTheGangToRunning) {
  AddNode("a", 2);
  JobId id = Started(GangSpec(2, 1));
  AgentReport report = ReportOf("a", TaskState::kRunning);
  ASSERT_EQ(report.tasks.size(), 2u);

  AgentReport one = report;
  one.tasks.pop_back();
  one.applied_version = 0;  // the second task is not applied yet: it is not lost
  ASSERT_TRUE(parts_->reconciler.Sync("a", one).ok());
  EXPECT_EQ(job(id).state, JobState::kStarting) << "one of two tasks runs";

  auto desired = parts_->reconciler.Sync("a", report);
  ASSERT_TRUE(desired.ok()) << desired.status().ToString();
  const Job& running = job(id);
  EXPECT_EQ(running.state, JobState::kRunning);
  EXPECT_TRUE(running.running_at.has_value());
  for (const auto& t : running.tasks) {
    EXPECT_EQ(t.state, TaskState::kRunning) << t.Name();
    EXPECT_EQ(t.pid, 100) << t.Name();
  }
  EXPECT_EQ(desired->tasks.size(), 2u) << "it keeps running both";
  auto stored = parts_->store->LoadJobs();
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ((*stored)[0].state, JobState::kRunning) << "written before the answer";
}

TEST_F(ReconcilerTest, ATaskTheAgentAppliedButNoLongerReportsIsLost) {
  AddNode("a", 2);
  JobId id = Started(GangSpec(2, 1, /*max_attempts=*/2));
  Report("a", TaskState::kRunning);
  ASSERT_EQ(job(id).state, JobState::kRunning);

  AgentReport report = ReportOf("a", TaskState::kRunning);
  TaskId gone = report.tasks.back().id;
  report.tasks.pop_back();
  ASSERT_TRUE(parts_->reconciler.Sync("a", report).ok());

  const Job& after = job(id);
  for (const auto& t : after.tasks) {
    if (after.IdOf(t) == gone) {
      EXPECT_EQ(t.state, TaskState::kLost);
    } else {
      EXPECT_TRUE(t.stop_requested) << "the rest of the gang stops";
    }
  }
  EXPECT_EQ(after.state, JobState::kStopping);
  EXPECT_EQ(after.stop_target, JobState::kPending) << "a node loss within the budget requeues";
  EXPECT_EQ(after.failures, 1);
}

TEST_F(ReconcilerTest, AReportForAnEarlierAttemptChangesNothing) {
  AddNode("a", 2);
  JobId id = Started(GangSpec(1, 1, /*max_attempts=*/2));
  AgentReport first = ReportOf("a", TaskState::kRunning);
  ASSERT_TRUE(parts_->reconciler.Sync("a", first).ok());
  Report("a", TaskState::kFailed, 1);  // attempt 1 fails: requeued, and placed again
  loop_->RunPosted();
  ASSERT_EQ(job(id).state, JobState::kStarting);
  ASSERT_EQ(job(id).attempt, 2);
  uint64_t version = job(id).version;

  // The agent, behind, still reports attempt 1's task running and has not applied attempt 2.
  auto desired = parts_->reconciler.Sync("a", first);
  ASSERT_TRUE(desired.ok());
  EXPECT_EQ(job(id).state, JobState::kStarting);
  EXPECT_EQ(job(id).tasks[0].state, TaskState::kAssigned);
  EXPECT_EQ(job(id).version, version) << "nothing was written";
  ASSERT_EQ(desired->tasks.size(), 1u);
  EXPECT_EQ(desired->tasks[0].id.attempt, 2) << "it is told to run attempt 2 instead";
}

TEST_F(ReconcilerTest, SyncOfAnUnknownNodeIsNotFound) {
  AddNode("a", 1);
  auto desired = parts_->reconciler.Sync("nope", AgentReport{});
  EXPECT_EQ(desired.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(parts_->reconciler.DesiredFor("nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(parts_->nodes.Find("nope"), nullptr) << "a sync registers nothing";
}

TEST_F(ReconcilerTest, CheckTimeoutsMarksASilentNodeLostAndRequeuesItsGang) {
  AddNode("a", 2);
  AddNode("b", 2);
  JobId id = Started(GangSpec(1, 2, /*max_attempts=*/2));
  std::string node = job(id).tasks[0].node_id;
  std::string other = node == "a" ? "b" : "a";
  Report(node, TaskState::kRunning);

  clock_.Advance(seconds(5));
  Report(other, TaskState::kRunning);  // the other node keeps syncing
  clock_.Advance(seconds(6));
  parts_->reconciler.CheckTimeouts();

  EXPECT_EQ(parts_->nodes.At(node).node.state, NodeState::kLost);
  EXPECT_EQ(parts_->nodes.At(other).node.state, NodeState::kReady) << "heard from 6s ago";
  EXPECT_FALSE(parts_->scheduling.cluster().IsReady(node));
  const Job& requeued = job(id);
  EXPECT_EQ(requeued.state, JobState::kPending) << "its only task was lost with the node";
  EXPECT_EQ(requeued.failures, 1);
  EXPECT_THAT(requeued.tasks, IsEmpty());
  EXPECT_EQ(parts_->jobs.pending().count(id), 1u);
}

TEST_F(ReconcilerTest, DrainMakesANodeUnschedulableAndWritesIt) {
  AddNode("a", 2);
  auto drained = parts_->reconciler.Drain("a", "bad fan");
  ASSERT_TRUE(drained.ok()) << drained.status().ToString();
  EXPECT_TRUE((*drained)->drained);
  EXPECT_EQ((*drained)->drain_reason, "bad fan");
  EXPECT_FALSE(parts_->scheduling.cluster().IsReady("a"));
  auto stored = parts_->store->LoadNodes();
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_TRUE((*stored)[0].drained);

  JobId id = Submit(GangSpec(1, 1));
  loop_->RunPosted();
  EXPECT_EQ(job(id).state, JobState::kPending) << "nothing new is placed on a drained node";

  ASSERT_TRUE(parts_->reconciler.Undrain("a").ok());
  loop_->RunPosted();
  EXPECT_EQ(job(id).state, JobState::kStarting);
  EXPECT_EQ(parts_->reconciler.Drain("nope", "").status().code(), StatusCode::kNotFound);
}

TEST_F(ReconcilerTest, ADrainTheStoreRefusesChangesNothing) {
  AddNode("a", 2);
  parts_->store->FailNextWrites(1, {FailingStateStore::Call::kSaveNode});
  auto drained = parts_->reconciler.Drain("a", "bad fan");
  ASSERT_FALSE(drained.ok());
  EXPECT_EQ(parts_->store->InjectedFailures(), 1);
  EXPECT_FALSE(parts_->nodes.At("a").node.drained);
  EXPECT_TRUE(parts_->nodes.At("a").node.drain_reason.empty());
  EXPECT_TRUE(parts_->scheduling.cluster().IsReady("a"));
  auto stored = parts_->store->LoadNodes();
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_FALSE((*stored)[0].drained);
  EXPECT_THAT(fail_stops_, IsEmpty()) << "a refused write before memory changed is no fail-stop";
}

TEST_F(ReconcilerTest, DesiredForListsOnlyTheLiveTasksNotAskedToStopOfThatNode) {
  AddNode("a", 2);
  AddNode("b", 2);
  JobId kept = Started(GangSpec(1, 2));
  JobId killed = Started(GangSpec(1, 2));
  std::string node = job(kept).tasks[0].node_id;
  std::string other = job(killed).tasks[0].node_id;
  ASSERT_NE(node, other) << "each fills a node";
  ASSERT_TRUE(parts_->lifecycle.Kill(killed, "user ada").ok());

  auto desired = parts_->reconciler.DesiredFor(node);
  ASSERT_TRUE(desired.ok());
  EXPECT_EQ(desired->version, parts_->nodes.At(node).version);
  ASSERT_EQ(desired->tasks.size(), 1u);
  const TaskLaunch& launch = desired->tasks[0];
  EXPECT_EQ(launch.id, job(kept).IdOf(job(kept).tasks[0]));
  EXPECT_THAT(launch.command, ElementsAre("train"));
  EXPECT_EQ(launch.gpus, job(kept).tasks[0].gpus);
  EXPECT_EQ(launch.run_as.user, "ada");
  EXPECT_FALSE(launch.checkpoint_dir.empty());

  auto stopping = parts_->reconciler.DesiredFor(other);
  ASSERT_TRUE(stopping.ok());
  EXPECT_THAT(stopping->tasks, IsEmpty()) << "the killed job's task is asked to stop";

  Report(node, TaskState::kSucceeded, 0);  // the kept job's only task ends
  auto after = parts_->reconciler.DesiredFor(node);
  ASSERT_TRUE(after.ok());
  EXPECT_THAT(after->tasks, IsEmpty()) << "an ended task is not run again";
}

}  // namespace
}  // namespace cohort::master
