// Checkpoints follow a job from machine to machine (docs/data.md, "Checkpoints"): each node keeps
// its own checkpoint directory, and the next attempt restores the last one its job stored.
// examples/checkpointing on a real cluster: a worker's machine dies mid-way; the gang is
// requeued on the machines left, and the next attempt resumes from the checkpoint.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <thread>

#include "common/strings.h"
#include "os/process.h"
#include "store/directory_store.h"
#include "store/snapshot.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;

using ::testing::HasSubstr;
using ::testing::Not;

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

// The step of the job's last stored checkpoint, if any.
std::optional<int64_t> StoredStep(LocalCluster& cluster, JobId id) {
  auto store = store::OpenDirectoryStore(cluster.dir() + "/master/store");
  if (!store.ok()) return std::nullopt;
  auto snapshot = store::ReadSnapshot(**store, fmt::format("jobs/{}/checkpoints", id));
  if (!snapshot.ok() || !snapshot->has_value()) return std::nullopt;
  return (*snapshot)->step;
}

TEST(CheckpointingTest, AttemptTwoOnAnotherMachineStartsFromTheStepAttemptOneStored) {
  LocalCluster cluster("checkpoint-store");
  cluster.StartMaster({"--node-timeout", "3s"});
  cluster.StartAgent("node-a", 1);
  cluster.StartAgent("node-b", 1);
  // Checkpoints at steps 10 to 40, each written aside and renamed into place, then waits; a
  // restarted attempt says where it resumed.
  JobId id = cluster.Submit(R"(
name: resumes
tasks:
  - role: worker
    resources: {gpus: 1, cpus: 1, memory: 256Mi}
    command: [/bin/sh, -c, 'c="$COHORT_CHECKPOINT_DIR/state"; if [ -f "$c" ]; then echo "resumed from $(cat "$c") in $COHORT_CHECKPOINT_DIR"; exit 0; fi; for s in 10 20 30 40; do echo "$s" > "$c.tmp" && mv "$c.tmp" "$c" && echo "cohort-checkpoint step=$s"; done; exec sleep 600']
restart: {max_attempts: 3, backoff: 1s}
)");
  // Attempt 1 stores step 40 while it runs (its directory stays the same for a look).
  ASSERT_TRUE(WaitFor([&] { return StoredStep(cluster, id) == 40; }, std::chrono::seconds(30)))
      << cluster.EventsText(id) << cluster.Logs(id);
  Job running = *cluster.client().GetJob(id);
  ASSERT_EQ(running.attempt, 1);
  std::string victim = running.tasks.at(0).node_id;
  EXPECT_THAT(
      ReadFileOrEmpty(cluster.AgentDir(victim) + fmt::format("/jobs/{}/checkpoints/state", id)),
      HasSubstr("40"))
      << "attempt 1's checkpoints are not on its own node";
  // Its supervisor pushed them to the directory store without loading libcurl, which would cost
  // every task's start some milliseconds (store/curl_library.h).
  std::string supervisor =
      ReadFileOrEmpty(cluster.AgentDir(victim) + "/tasks/" + TaskId{id, 1, "worker", 0}.ToString() +
                      "/supervisor.pid");
  std::string maps = ReadFileOrEmpty("/proc/" + std::string(Trim(supervisor)) + "/maps");
  ASSERT_THAT(maps, HasSubstr("cohort-run-task")) << supervisor;
  EXPECT_THAT(maps, Not(HasSubstr("libcurl")));

  // Its machine is lost, with its disk: attempt 2 runs on the other one, from the store.
  cluster.KillMachine(victim);
  fs::remove_all(cluster.AgentDir(victim));
  Job done = cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(60));
  ASSERT_EQ(done.state, JobState::kSucceeded) << cluster.EventsText(id);
  EXPECT_EQ(done.attempt, 2);
  EXPECT_NE(done.tasks.at(0).node_id, victim);
  ASSERT_TRUE(done.restored_from) << cluster.EventsText(id);
  EXPECT_EQ(done.restored_from->attempt, 1);
  EXPECT_EQ(done.restored_from->step, 40);
  std::string other = victim == "node-a" ? "node-b" : "node-a";
  EXPECT_THAT(cluster.Logs(id, "worker/0", 2),
              HasSubstr("resumed from 40 in " + cluster.AgentDir(other)));
  EXPECT_THAT(cluster.Logs(id, "worker/0", 2),
              HasSubstr("cohort: restored the checkpoint of attempt 1 at step 40"));
  EXPECT_THAT(cluster.EventsText(id),
              HasSubstr("checkpoint: started from the checkpoint of attempt 1 at step 40"));
  CommandResult status = cluster.Cohort({"status", std::to_string(id)});
  EXPECT_THAT(status.out, HasSubstr("Started from: the checkpoint of attempt 1 at step 40"));
  EXPECT_THAT(status.out, HasSubstr("2: every task succeeded (from the checkpoint of attempt 1 at "
                                    "step 40 (1 file, 3 bytes))"))
      << status.out;
}

}  // namespace
}  // namespace cohort::testing
