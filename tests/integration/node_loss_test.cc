// Machines that die, come back wiped, or are drained, on a real cluster (docs/reliability.md).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <signal.h>

#include "os/durable_file.h"
#include "os/process.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

// Each start of each task appends "<attempt> <task>" to `starts`, then the task sleeps.
std::string Recorded(const std::string& starts, int replicas, const std::string& extra = "") {
  return fmt::format(R"(
name: recorded
tasks:
  - role: worker
    replicas: {}
    resources: {{gpus: 1}}
    command: [sh, -c, 'echo "$COHORT_ATTEMPT $COHORT_TASK_INDEX" >> {}; exec sleep 600']
restart: {{max_attempts: 3}}
grace_period: 2s
{})",
                     replicas, starts, extra);
}

TEST(NodeLossTest, AMachineThatDiesHasItsGangRequeuedWithinFifteenSeconds) {
  LocalCluster cluster("nodeloss");
  cluster.StartMaster();  // the default --node-timeout: 10s
  for (const char* node : {"node-a", "node-b", "node-c"}) cluster.StartAgent(node, 1);
  std::string starts = cluster.dir() + "/starts";
  JobId id = cluster.Submit(Recorded(starts, 2));
  Job running = cluster.WaitForJob(id, [](const Job& j) {
    return j.state == JobState::kRunning && j.tasks[0].pid != 0 && j.tasks[1].pid != 0;
  });
  ASSERT_EQ(running.state, JobState::kRunning);
  std::string victim = running.tasks[1].node_id;
  pid_t survivor = static_cast<pid_t>(running.tasks[0].pid);
  auto killed_at = std::chrono::steady_clock::now();
  cluster.KillMachine(victim);

  Job requeued = cluster.WaitForJob(
      id, [](const Job& j) { return j.attempt == 2 && j.state == JobState::kRunning; },
      std::chrono::seconds(30));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  ASSERT_EQ(requeued.attempt, 2) << requeued.message;
  EXPECT_LT(seconds, 15.0) << "from the machine's death to attempt 2 running";
  std::printf("machine loss to attempt 2 running: %.1f s\n", seconds);
  EXPECT_FALSE(ProcessAlive(survivor)) << "the surviving task of attempt 1 must be stopped";
  for (const auto& t : requeued.tasks) EXPECT_NE(t.node_id, victim);
  EXPECT_THAT(cluster.EventsText(id),
              HasSubstr(fmt::format("was lost: node {} was silent", victim)));
  auto nodes = cluster.Cohort({"nodes"});
  EXPECT_THAT(nodes.out, HasSubstr("LOST"));
  // Every (attempt, task) started exactly once.
  WaitFor(
      [&] { return ReadFileOrEmpty(starts).size() >= std::string("1 0\n1 1\n2 0\n2 1\n").size(); });
  EXPECT_EQ(ReadFileOrEmpty(starts).size(), std::string("1 0\n1 1\n2 0\n2 1\n").size())
      << ReadFileOrEmpty(starts);

  // A kill now ends the job at once, with nothing on the lost node to wait for.
  ASSERT_EQ(cluster.Cohort({"kill", std::to_string(id)}).exit_code, 0);
  EXPECT_EQ(cluster.WaitForState(id, JobState::kKilled, std::chrono::seconds(10)).state,
            JobState::kKilled);
}

TEST(NodeLossTest, AMasterStoppedForTwelveSecondsLosesNoNode) {
  LocalCluster cluster("pause");
  cluster.StartMaster();  // the default --node-timeout: 10s
  for (const char* node : {"node-a", "node-b"}) cluster.StartAgent(node, 1);
  std::string starts = cluster.dir() + "/starts";
  JobId id = cluster.Submit(Recorded(starts, 2));
  ASSERT_EQ(cluster.WaitForState(id, JobState::kRunning).attempt, 1);
  // A frozen VM, a starved CPU, an operator's SIGSTOP: the master hears nothing for 12 s, more
  // than the node timeout, while every agent keeps trying.
  ASSERT_EQ(::kill(cluster.master_pid(), SIGSTOP), 0);
  std::this_thread::sleep_for(std::chrono::seconds(12));
  ASSERT_EQ(::kill(cluster.master_pid(), SIGCONT), 0);
  // Long enough for a tick to judge the nodes, and for the agents to sync again.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  auto nodes = cluster.client().Nodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  for (const auto& n : (*nodes)["nodes"]) EXPECT_EQ(n["state"], "READY") << n.dump();
  Job job = cluster.WaitForState(id, JobState::kRunning);
  EXPECT_EQ(job.attempt, 1);
  EXPECT_THAT(cluster.EventsText(id), ::testing::Not(HasSubstr("was silent")))
      << "a node was judged on the pause";
}

// libfaketime (Debian's faketime package, scripts/setup.sh) steps the master's wall clock by what
// the file says, read at every call; its monotonic clock stays the machine's.
constexpr const char* kFaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

TEST(NodeLossTest, AStepOfTheMastersWallClockLosesNoNodeAndHidesNoDeadOne) {
  ASSERT_TRUE(std::filesystem::exists(kFaketime)) << kFaketime << ": run scripts/setup.sh";
  LocalCluster cluster("clockstep");
  std::string offset = cluster.dir() + "/faketime";
  ASSERT_TRUE(WriteFileAtomically(offset, "+0\n", 0644, Durability::kProcessCrash).ok());
  cluster.StartMaster({}, {{"LD_PRELOAD", kFaketime},
                           {"FAKETIME_TIMESTAMP_FILE", offset},
                           {"FAKETIME_NO_CACHE", "1"},
                           {"DONT_FAKE_MONOTONIC", "1"}});
  for (const char* node : {"node-a", "node-b", "node-c"}) cluster.StartAgent(node, 1);
  std::string starts = cluster.dir() + "/starts";
  JobId id = cluster.Submit(Recorded(starts, 2));
  Job running = cluster.WaitForState(id, JobState::kRunning);
  ASSERT_EQ(running.attempt, 1);

  // A minute forward: nobody was silent for a minute. Every node syncs again (within 5 s), and
  // the master, whose time for each sync is now a minute ahead of ours, keeps them all READY.
  ASSERT_TRUE(WriteFileAtomically(offset, "+60\n", 0644, Durability::kProcessCrash).ok());
  auto stepped_and_ready = [&] {
    auto nodes = cluster.client().Nodes();
    if (!nodes.ok() || (*nodes)["nodes"].size() != 3) return false;
    for (const auto& n : (*nodes)["nodes"]) {
      auto seen = ParseTimestamp(n["last_seen"].get<std::string>());
      if (n["state"] != "READY" || !seen.ok() ||
          *seen < std::chrono::system_clock::now() + std::chrono::seconds(50)) {
        return false;
      }
    }
    return true;
  };
  EXPECT_TRUE(WaitFor(stepped_and_ready, std::chrono::seconds(10)));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_TRUE(stepped_and_ready());
  EXPECT_EQ(cluster.WaitForState(id, JobState::kRunning).attempt, 1);
  EXPECT_THAT(cluster.EventsText(id), ::testing::Not(HasSubstr("was silent")));

  // An hour back, then a machine dies: it is found within its timeout all the same.
  ASSERT_TRUE(WriteFileAtomically(offset, "-3600\n", 0644, Durability::kProcessCrash).ok());
  std::string victim = running.tasks[1].node_id;
  auto killed_at = std::chrono::steady_clock::now();
  cluster.KillMachine(victim);
  Job requeued = cluster.WaitForJob(
      id, [](const Job& j) { return j.attempt == 2 && j.state == JobState::kRunning; },
      std::chrono::seconds(30));
  ASSERT_EQ(requeued.attempt, 2) << requeued.message;
  EXPECT_LT(std::chrono::steady_clock::now() - killed_at, std::chrono::seconds(15));
  EXPECT_THAT(cluster.EventsText(id),
              HasSubstr(fmt::format("was lost: node {} was silent", victim)));
}

TEST(NodeLossTest, AMachineThatComesBackWipedNeverRestartsItsTasks) {
  LocalCluster cluster("wiped");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1);
  std::string starts = cluster.dir() + "/starts";
  JobId id = cluster.Submit(Recorded(starts, 1));
  Job running = cluster.WaitForJob(
      id, [](const Job& j) { return j.state == JobState::kRunning && j.tasks[0].pid != 0; });
  ASSERT_EQ(running.state, JobState::kRunning);
  // Re-imaged: the machine dies, and comes back at once with an empty data directory.
  cluster.KillMachine("node-a");
  std::filesystem::remove_all(cluster.AgentDir("node-a"));
  cluster.StartAgent("node-a", 1);

  Job after = cluster.WaitForJob(
      id, [](const Job& j) { return j.attempt == 2 && j.state == JobState::kRunning; },
      std::chrono::seconds(20));
  ASSERT_EQ(after.attempt, 2) << after.message;
  EXPECT_THAT(cluster.EventsText(id), HasSubstr("came back without its tasks"));
  WaitFor([&] { return ReadFileOrEmpty(starts).size() >= 8; });
  EXPECT_EQ(ReadFileOrEmpty(starts), "1 0\n2 0\n") << "attempt 1 must never start twice";
}

TEST(NodeLossTest, DrainUndrainAndRemoveFromTheCli) {
  LocalCluster cluster("drain");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1);
  cluster.StartAgent("node-b", 1);
  ASSERT_TRUE(
      WaitFor([&] { return cluster.Cohort({"nodes"}).out.find("node-b") != std::string::npos; }));
  auto drained = cluster.Cohort({"node", "drain", "node-a", "--reason", "bad fan"});
  ASSERT_EQ(drained.exit_code, 0) << drained.err;
  EXPECT_THAT(cluster.Cohort({"nodes"}).out, HasSubstr("READY,DRAINED"));
  std::string starts = cluster.dir() + "/starts";
  JobId first = cluster.Submit(Recorded(starts, 1));
  Job j = cluster.WaitForState(first, JobState::kRunning);
  EXPECT_EQ(j.tasks.at(0).node_id, "node-b");
  JobId second = cluster.Submit(Recorded(starts, 1));
  cluster.WaitForJob(second, [](const Job& j) { return !j.message.empty(); });
  EXPECT_EQ(cluster.client().GetJob(second)->state, JobState::kPending);
  ASSERT_EQ(cluster.Cohort({"node", "undrain", "node-a"}).exit_code, 0);
  EXPECT_EQ(cluster.WaitForState(second, JobState::kRunning).tasks.at(0).node_id, "node-a");

  auto missing = cluster.Cohort({"node", "drain", "node-x"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.err, HasSubstr("node node-x does not exist"));

  // Removing a node with a task on it: the task is LOST and its job requeued.
  cluster.StopAgent("node-a");
  ASSERT_EQ(cluster.Cohort({"node", "remove", "node-a"}).exit_code, 0);
  EXPECT_THAT(cluster.Cohort({"nodes"}).out, ::testing::Not(HasSubstr("node-a")));
  EXPECT_TRUE(WaitFor([&] {
    return cluster.EventsText(second).find("node node-a was removed") != std::string::npos;
  }));
}

TEST(NodeLossTest, ASubmissionRetriedWithItsRequestIdCreatesOneJob) {
  LocalCluster cluster("idempotent");
  cluster.StartMaster();
  std::string spec = cluster.dir() + "/job.yaml";
  std::ofstream(spec) << "name: once\ntasks:\n  - role: worker\n    command: [echo, once]\n";
  auto a = cluster.Cohort({"submit", "--request-id", "nightly-2026-11-23", spec});
  auto b = cluster.Cohort({"submit", "--request-id", "nightly-2026-11-23", spec});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  auto c = cluster.Cohort({"submit", spec});  // a new request id: a new job
  EXPECT_NE(c.out, a.out);
  auto jobs = cluster.client().ListJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), 2u);
}

}  // namespace
}  // namespace cohort::testing
