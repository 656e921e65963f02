// An agent stopped and started again adopts the tasks its predecessor started: they keep running
// meanwhile, finish once, and their whole output reaches the master.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

TEST(AgentRestart, TasksKeepRunningAndAreAdopted) {
  LocalCluster cluster("agentrestart");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  JobId id = cluster.Submit(R"(
name: survivor
tasks:
  - role: worker
    replicas: 2
    resources: {gpus: 1}
    command: [sh, -c, 'echo start $COHORT_TASK_INDEX; sleep 2; echo end $COHORT_TASK_INDEX']
)");
  Job before = cluster.WaitForJob(id, [](const Job& j) {
    return j.state == JobState::kRunning && j.tasks[0].pid != 0 && j.tasks[1].pid != 0;
  });
  cluster.StopAgent("node-a");
  for (const auto& t : before.tasks) EXPECT_TRUE(ProcessAlive(static_cast<pid_t>(t.pid)));
  cluster.StartAgent("node-a", 2);
  Job after = cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(20));
  EXPECT_EQ(after.attempt, 1) << "the attempt must not run twice";
  for (size_t i = 0; i < after.tasks.size(); ++i) {
    EXPECT_EQ(after.tasks[i].pid, before.tasks[i].pid) << "the same process, adopted";
  }
  EXPECT_EQ(cluster.Logs(id, "worker/0"), "start 0\nend 0\n");
  EXPECT_EQ(cluster.Logs(id, "worker/1"), "start 1\nend 1\n");
}

}  // namespace
}  // namespace cohort::testing
