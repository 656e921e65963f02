// examples/checkpointing on a real cluster: a worker's machine dies mid-way; the gang is
// requeued on the machines left, and the next attempt resumes from the checkpoint.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <thread>

#include "os/process.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

TEST(CheckpointingTest, ANodeLossResumesFromTheCheckpoint) {
  LocalCluster cluster("checkpointing");
  cluster.StartMaster({"--node-timeout", "3s"});
  for (const char* node : {"node-a", "node-b", "node-c"}) cluster.StartAgent(node, 4);
  std::string dir = SourceDir() + "/examples/checkpointing";
  JobId id = cluster.Submit(fmt::format(R"(
name: checkpointing
framework: pytorch
tasks:
  - role: worker
    replicas: 2
    resources: {{gpus: 4, cpus: 1, memory: 2Gi}}
    command: [/usr/bin/python3, train.py, --steps, "120", --checkpoint-every, "10",
              --step-seconds, "0.05"]
    workdir: {}
restart: {{max_attempts: 3, backoff: 1s}}
grace_period: 5s
)",
                                        dir));
  std::string outputs = fmt::format("{}/master/storage/jobs/{}/outputs", cluster.dir(), id);
  // Wait until attempt 1 has saved a few checkpoints, then kill worker/1's machine. (The
  // survivor may notice its peer's death before the master does, and fail: either way the gang
  // is requeued.)
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (cluster.Logs(id, "worker/0").find("step 30:") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  Job running = *cluster.client().GetJob(id);
  ASSERT_EQ(running.state, JobState::kRunning) << cluster.Logs(id);
  std::string victim = running.tasks.at(1).node_id;
  cluster.KillMachine(victim);

  Job done = cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(120));
  ASSERT_EQ(done.state, JobState::kSucceeded) << done.message;
  EXPECT_EQ(done.attempt, 2);
  for (const auto& t : done.tasks) EXPECT_NE(t.node_id, victim) << "placed on the lost node";
  std::string attempts = ReadFileOrEmpty(outputs + "/attempts.log");
  EXPECT_THAT(attempts, HasSubstr("attempt=1 start_step=0\n"));
  // Attempt 2 started where a checkpoint of attempt 1 left off: at step 30 or later.
  size_t at = attempts.find("attempt=2 start_step=");
  ASSERT_NE(at, std::string::npos) << attempts;
  int resumed = std::atoi(attempts.c_str() + at + std::string("attempt=2 start_step=").size());
  EXPECT_GE(resumed, 30) << attempts;
  EXPECT_THAT(cluster.Logs(id, "worker/0", 2), HasSubstr("(resumed from checkpoint)"));
  EXPECT_THAT(cluster.Logs(id, "worker/0", 2), HasSubstr("finished 120 steps"));
  // Its saves were reported as checkpoints (the file, and the line printed after it).
  EXPECT_TRUE(done.last_checkpoint_at);
  // The event names the lost node.
  auto events = cluster.client().Events(id);
  ASSERT_TRUE(events.ok());
  bool named = false;
  for (const auto& e : *events) named |= e.message.find("node " + victim) != std::string::npos;
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace cohort::testing
