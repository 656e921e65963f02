// (e) A master stopped and started again on the same data directory knows every job, and its
// agents, whose tasks kept running meanwhile, reconcile with it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

TEST(MasterRestart, KnowsEveryJobAndTheRunningOnesKeepRunning) {
  LocalCluster cluster("restart");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  JobId done = cluster.Submit(R"(
name: done
tasks: [{role: main, command: [echo, finished]}]
)");
  cluster.WaitForState(done, JobState::kSucceeded);
  JobId running = cluster.Submit(R"(
name: long
tasks: [{role: main, resources: {gpus: 1}, command: [sh, -c, 'echo before; sleep 3; echo after']}]
)");
  Job before = cluster.WaitForJob(
      running, [](const Job& j) { return j.state == JobState::kRunning && j.tasks[0].pid != 0; });
  JobId pending = cluster.Submit(R"(
name: too-big
tasks: [{role: main, resources: {gpus: 8}, command: ["true"]}]
)");
  JobId killed = cluster.Submit(R"(
name: killed
tasks: [{role: main, resources: {gpus: 8}, command: ["true"]}]
)");
  ASSERT_TRUE(cluster.client().Kill(killed).ok());

  cluster.StopMaster();
  cluster.StartMaster();

  auto jobs = cluster.client().ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 4u);
  EXPECT_EQ((*jobs)[0].state, JobState::kSucceeded);
  EXPECT_EQ((*jobs)[0].spec.name, "done");
  EXPECT_EQ((*jobs)[2].state, JobState::kPending);
  EXPECT_EQ((*jobs)[3].state, JobState::kKilled);
  Job after = *cluster.client().GetJob(running);
  EXPECT_EQ(after.tasks.at(0).pid, before.tasks.at(0).pid);
  // The agent reconnects, and the task that ran through the restart finishes normally, with
  // its whole output.
  Job finished = cluster.WaitForState(running, JobState::kSucceeded, std::chrono::seconds(20));
  EXPECT_EQ(finished.attempt, 1) << "the attempt must not run twice";
  EXPECT_EQ(cluster.Logs(running), "before\nafter\n");
  EXPECT_EQ(cluster.client().GetJob(pending)->state, JobState::kPending);
  auto events = cluster.client().Events(running);
  ASSERT_TRUE(events.ok());
  EXPECT_GE(events->size(), 4u);
}

}  // namespace
}  // namespace cohort::testing
