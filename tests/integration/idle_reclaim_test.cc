// Idle GPUs reclaimed against real daemons (issue 27, item 6): agents on the fake NVML whose GPUs
// report 0% busy, a master with --reclaim-idle-gpus. A job whose restart.on lacks preempted ends
// with the reason after one reclaim; one that restarts on preemption is requeued once, not onto
// the GPU it left idle, and ends when reclaimed again: never the loop of stop and requeue onto the
// same GPU.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A master that finds a GPU idle after 3 s and reclaims it, and `nodes` agents of one fake GPU
// each, all 0% busy.
void StartIdleCluster(LocalCluster& cluster, const std::vector<std::string>& nodes) {
  const std::string load_file = cluster.dir() + "/gpu-load";
  std::ofstream(load_file) << "0 0 1048576\n";
  cluster.StartMaster({"--advice-window", "2s", "--idle-gpu-after", "3s", "--reclaim-idle-gpus"});
  for (const auto& node : nodes) {
    cluster.StartAgent(node, /*gpus=*/-1,
                       {"--nvml-library", FakeNvmlLibrary(), "--sample-interval", "1s"},
                       {{"FAKE_NVML_GPUS", "1"}, {"FAKE_NVML_UTILIZATION_FILE", load_file}});
  }
}

TEST(IdleReclaim, AJobWithoutPreemptedInRestartOnEndsWithTheReasonAndIsNotRestarted) {
  LocalCluster cluster("idle-reclaim-ends");
  StartIdleCluster(cluster, {"gpu-node"});
  JobId id = cluster.Submit(R"(
name: idle
tasks: [{role: main, resources: {gpus: 1, cpus: 0.1}, command: [sleep, "600"]}]
restart: {on: []}
)");
  Job ended = cluster.WaitForJob(
      id, [](const Job& j) { return IsTerminal(j.state); }, std::chrono::seconds(60));
  EXPECT_EQ(ended.state, JobState::kFailed) << ended.message;
  EXPECT_EQ(ended.attempt, 1) << "one attempt, reclaimed once, never requeued";
  EXPECT_THAT(ended.message, HasSubstr("idle GPUs reclaimed: its GPU has been idle for"));
  EXPECT_THAT(ended.message, HasSubstr("it ends: restart.on does not include preempted"));
  std::string events = cluster.EventsText(id);
  EXPECT_THAT(events, HasSubstr("reclaimed: idle GPUs reclaimed"));
  EXPECT_THAT(events, Not(HasSubstr("requeued"))) << events;
  // Where people look.
  auto status = cluster.Cohort({"status", std::to_string(id)});
  EXPECT_THAT(status.out, HasSubstr("FAILED"));
  EXPECT_THAT(status.out, HasSubstr("idle GPUs reclaimed"));
  auto why = cluster.Cohort({"why", std::to_string(id)});
  EXPECT_THAT(why.out, HasSubstr("it ended FAILED: idle GPUs reclaimed"));
}

TEST(IdleReclaim, ARequeuedJobGoesToAnotherGpuAndEndsWhenReclaimedAgain) {
  LocalCluster cluster("idle-reclaim-requeue");
  StartIdleCluster(cluster, {"node-a", "node-b"});
  JobId id = cluster.Submit(R"(
name: idle
tasks: [{role: main, resources: {gpus: 1, cpus: 0.1}, command: [sleep, "600"]}]
restart: {on: [preempted], max_attempts: 1}
)");
  Job ended = cluster.WaitForJob(
      id, [](const Job& j) { return IsTerminal(j.state); }, std::chrono::seconds(90));
  EXPECT_EQ(ended.state, JobState::kFailed) << ended.message;
  EXPECT_EQ(ended.attempt, 2) << "requeued once, then ended";
  EXPECT_EQ(ended.failures, 0) << "no restart budget spent";
  EXPECT_THAT(ended.message, HasSubstr("it ends: its idle GPUs were reclaimed before"));
  ASSERT_EQ(ended.history.size(), 2u);
  std::string first = ended.history[0].nodes.at("main/0");
  std::string second = ended.history[1].nodes.at("main/0");
  EXPECT_NE(first, second) << "not back onto the GPU it left idle";
  EXPECT_THAT(cluster.EventsText(id), HasSubstr(fmt::format("kept off node {} until", first)));
}

}  // namespace
}  // namespace cohort::testing
