// Idle sessions come back (issue 31, item 6): shells on agents whose fake NVML reports their GPU
// idle or busy, against a master whose idle timeout is seconds. An idle shell is warned in its
// terminal and then ended, its GPU freed; input or a busy GPU keeps one; a preempted session is
// warned first; and what a session may not ask for is refused.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/integration/local_cluster.h"
#include "tests/integration/pty_cohort.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

// The fake NVML's one GPU at `percent` busy.
void SetGpuLoad(LocalCluster& cluster, int percent) {
  std::ofstream(cluster.dir() + "/gpu-load") << "0 " << percent << " 1048576\n";
}

// A master whose sessions end after 6 s idle, warned 3 s before, and one agent of one fake GPU.
void StartSessionCluster(LocalCluster& cluster, std::vector<std::string> master_args = {}) {
  SetGpuLoad(cluster, 0);
  master_args.insert(master_args.end(), {"--max-idle-timeout", "6s", "--session-warning", "3s"});
  cluster.StartMaster(master_args);
  cluster.StartAgent(
      "gpu-node", /*gpus=*/-1, {"--nvml-library", FakeNvmlLibrary(), "--sample-interval", "1s"},
      {{"FAKE_NVML_GPUS", "1"}, {"FAKE_NVML_UTILIZATION_FILE", cluster.dir() + "/gpu-load"}});
}

JobId AttachedSession(PtyCohort& shell) {
  EXPECT_TRUE(shell.WaitFor("attached to session")) << shell.seen();
  size_t at = shell.seen().find("session ");
  return at == std::string::npos ? 0 : std::atoll(shell.seen().c_str() + at + 8);
}

TEST(IdleSessions, AnIdleShellIsWarnedInItsTerminalThenEndedAndItsGpuFreed) {
  LocalCluster cluster("session-idle-ends");
  StartSessionCluster(cluster);
  PtyCohort shell(cluster, {"shell", "--gpus", "1", "--cpus", "0.1"}, cluster.admin_token());
  const JobId id = AttachedSession(shell);
  const auto attached = std::chrono::steady_clock::now();
  // Nothing typed, the GPU at 0%: a warning in the terminal, then the end.
  EXPECT_TRUE(shell.WaitFor("[cohort] idle for")) << shell.seen();
  EXPECT_TRUE(shell.WaitFor("(its GPU idle and no input): this session ends in")) << shell.seen();
  Job ended = cluster.WaitForJob(
      id, [](const Job& j) { return IsTerminal(j.state); }, std::chrono::seconds(30));
  EXPECT_GE(std::chrono::steady_clock::now() - attached, 5s) << "not before its timeout";
  EXPECT_EQ(ended.state, JobState::kKilled) << ended.message;
  EXPECT_THAT(ended.message, HasSubstr("ended: idle for 6s (its GPU idle and no input)"));
  const std::string events = cluster.EventsText(id);
  EXPECT_THAT(events, HasSubstr("idle: idle for"));
  EXPECT_THAT(events, HasSubstr("ended: idle for 6s"));
  EXPECT_TRUE(shell.WaitFor("this session ends now")) << shell.seen();
  EXPECT_NE(shell.WaitExit(), -1) << "cohort shell ends with its session";
  // Its GPU is free for the next job.
  JobId next = cluster.Submit(R"(
name: next
tasks: [{role: main, resources: {gpus: 1, cpus: 0.1}, command: [sh, -c, "exit 0"]}]
)");
  EXPECT_EQ(cluster.WaitForState(next, JobState::kSucceeded).state, JobState::kSucceeded);
}

TEST(IdleSessions, InputOrABusyGpuKeepsASessionPastItsTimeout) {
  LocalCluster cluster("session-idle-kept");
  StartSessionCluster(cluster);
  PtyCohort shell(cluster, {"shell", "--gpus", "1", "--cpus", "0.1"}, cluster.admin_token());
  const JobId id = AttachedSession(shell);
  // Typing, at most 2 s apart, for twice the timeout.
  for (int i = 0; i < 12; ++i) {
    // $((...)): what the shell prints is not what it echoes of the line typed.
    shell.Type(fmt::format("echo typed-$((1000+{}))\r", i));
    ASSERT_TRUE(shell.WaitFor(fmt::format("typed-{}", 1000 + i))) << shell.seen();
    std::this_thread::sleep_for(1s);
  }
  EXPECT_EQ(cluster.client().GetJob(id)->state, JobState::kRunning);
  // No input, but the GPU busy: kept too.
  SetGpuLoad(cluster, 60);
  std::this_thread::sleep_for(12s);
  EXPECT_EQ(cluster.client().GetJob(id)->state, JobState::kRunning) << cluster.EventsText(id);
  EXPECT_THAT(cluster.EventsText(id), Not(HasSubstr("ended: idle")));
  // Idle again: ended.
  SetGpuLoad(cluster, 0);
  Job ended = cluster.WaitForJob(
      id, [](const Job& j) { return IsTerminal(j.state); }, std::chrono::seconds(30));
  EXPECT_EQ(ended.state, JobState::kKilled) << ended.message;
}

TEST(IdleSessions, APreemptedSessionIsWarnedFirst) {
  LocalCluster cluster("session-preempted");
  // A job younger than --preemption-min-runtime (1m) is never preempted: 0s here.
  StartSessionCluster(cluster, {"--interactive-priority", "low", "--preemption-min-runtime", "0s"});
  SetGpuLoad(cluster, 60);  // in use: only the preemption may end it
  PtyCohort shell(cluster, {"shell", "--gpus", "1", "--cpus", "0.1"}, cluster.admin_token());
  const JobId id = AttachedSession(shell);
  EXPECT_EQ(cluster.client().GetJob(id)->spec.priority, kPriorityLow) << "the cluster's";
  JobId urgent = cluster.Submit(R"(
name: urgent
priority: high
tasks: [{role: main, resources: {gpus: 1, cpus: 0.1}, command: [sh, -c, "exit 0"]}]
)");
  EXPECT_TRUE(shell.WaitFor(fmt::format("[cohort] to be preempted for job {} in 3s", urgent)))
      << shell.seen();
  const auto warned = std::chrono::steady_clock::now();
  Job ended = cluster.WaitForJob(
      id, [](const Job& j) { return IsTerminal(j.state); }, std::chrono::seconds(30));
  EXPECT_GE(std::chrono::steady_clock::now() - warned, 2500ms) << "the warning comes first";
  EXPECT_THAT(ended.message, HasSubstr("preempted"));
  EXPECT_THAT(cluster.EventsText(id), HasSubstr(fmt::format("to be preempted for job {}", urgent)));
  EXPECT_EQ(cluster.WaitForState(urgent, JobState::kSucceeded).state, JobState::kSucceeded);
}

TEST(IdleSessions, WhatASessionMayNotAskForIsRefused) {
  LocalCluster cluster("session-refused");
  StartSessionCluster(cluster);
  auto long_timeout = cluster.Cohort({"shell", "--idle-timeout", "1h"});
  EXPECT_EQ(long_timeout.exit_code, 1);
  EXPECT_THAT(long_timeout.err,
              HasSubstr("session.idle_timeout: 1h is longer than this cluster's longest, 6s "
                        "(cohortd master --max-idle-timeout)"));
  auto no_job = cluster.Cohort({"shell", "--attach", "x12"});
  EXPECT_EQ(no_job.exit_code, 1);
  EXPECT_THAT(no_job.err, HasSubstr("x12"));
  for (const auto& [flag, value, says] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--max-idle-timeout", "0s", "--max-idle-timeout: must be from 1s to 7d"},
           {"--session-warning", "soon", "--session-warning"},
           {"--interactive-priority", "urgent", "--interactive-priority"}}) {
    auto r = RunCommand({"/usr/bin/timeout", "20", BinDir() + "/cohortd", "master", flag, value,
                         "--data-dir", cluster.dir() + "/refused-master"});
    EXPECT_EQ(r.exit_code, 2) << flag << " " << r.err;
    EXPECT_THAT(r.err, HasSubstr(says));
  }
}

}  // namespace
}  // namespace cohort::testing
