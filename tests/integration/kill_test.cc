// (d) Kill stops every process of the job, including ones that left its process group, and
// frees its GPUs.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>

#include "common/strings.h"
#include "os/process.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

// Every process of every task of the job on `agent`, found from the supervisors' pid files.
std::vector<pid_t> JobProcesses(LocalCluster& cluster, const std::string& agent, JobId id) {
  std::vector<pid_t> pids;
  for (int i = 0; i < 2; ++i) {
    std::string dir =
        cluster.AgentDir(agent) + "/tasks/" + std::to_string(id) + ".1.worker." + std::to_string(i);
    pid_t supervisor = std::atoi(ReadFileOrEmpty(dir + "/supervisor.pid").c_str());
    for (pid_t p : ProcessTree(supervisor)) pids.push_back(p);
  }
  return pids;
}

TEST(Kill, StopsEveryProcessAndFreesGpus) {
  LocalCluster cluster("kill");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 4);
  // Each task starts a background child, a grandchild that escapes into its own session, and
  // ignores SIGTERM itself: only the grace period's SIGKILL ends it.
  JobId id = cluster.Submit(R"(
name: stubborn
grace_period: 1s
tasks:
  - role: worker
    replicas: 2
    resources: {gpus: 2}
    command: [sh, -c, 'trap "" TERM; sleep 300 & setsid sleep 301 & echo ready; wait']
)");
  cluster.WaitForState(id, JobState::kRunning);
  ASSERT_TRUE(WaitFor([&] {
    std::string logs = cluster.Logs(id);
    return logs.find("[worker/0] ready") != std::string::npos &&
           logs.find("[worker/1] ready") != std::string::npos;
  }));
  std::vector<pid_t> pids;
  // sh, sleep 300 and the escaped sleep 301, under each task's supervisor.
  ASSERT_TRUE(WaitFor([&] {
    pids = JobProcesses(cluster, "node-a", id);
    return pids.size() >= 8;
  })) << "found "
      << pids.size() << " processes";
  for (pid_t p : pids) EXPECT_TRUE(ProcessAlive(p)) << p;

  auto killed = cluster.Cohort({"kill", std::to_string(id)});
  EXPECT_EQ(killed.exit_code, 0) << killed.err;
  EXPECT_THAT(killed.out, ::testing::HasSubstr("STOPPING"));
  Job job = cluster.WaitForState(id, JobState::kKilled, std::chrono::seconds(20));
  for (const auto& t : job.tasks) EXPECT_EQ(t.state, TaskState::kKilled);
  ASSERT_TRUE(WaitFor(
      [&] {
        for (pid_t p : pids) {
          if (ProcessAlive(p)) return false;
        }
        return true;
      },
      std::chrono::seconds(5)));
  for (pid_t p : pids) EXPECT_FALSE(ProcessAlive(p)) << "pid " << p << " survived the kill";

  auto nodes = cluster.client().Nodes();
  ASSERT_TRUE(nodes.ok());
  for (const auto& g : (*nodes)["nodes"][0]["gpus"]) EXPECT_TRUE(g["job_id"].is_null());
  // Killing it again is a conflict, not a crash.
  auto again = cluster.client().Kill(id);
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  auto unknown = cluster.Cohort({"kill", "999"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, ::testing::HasSubstr("job 999 does not exist"));
}

TEST(Kill, WhatATaskLeftBehindEndsWithIt) {
  LocalCluster cluster("leftover");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1);
  // The main process exits at once, leaving a background child and one that escaped into a
  // session of its own: both end with the task, not after it (the supervisor reaps them as a
  // subreaper, and then knows nothing is left without scanning /proc).
  JobId id = cluster.Submit(R"(
name: leaves
tasks:
  - role: worker
    resources: {gpus: 1}
    command: [sh, -c, 'sleep 300 & echo "pid $!"; setsid sleep 301 & echo "pid $!"; exit 0']
)");
  Job job = cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(20));
  std::vector<pid_t> pids;
  std::istringstream logs(cluster.Logs(id));
  for (std::string line; std::getline(logs, line);) {
    if (auto at = line.find("pid "); at != std::string::npos) {
      pids.push_back(std::atoi(line.c_str() + at + 4));
    }
  }
  ASSERT_EQ(pids.size(), 2u) << cluster.Logs(id);
  for (pid_t p : pids) {
    ASSERT_GT(p, 0);
    EXPECT_FALSE(ProcessAlive(p)) << "pid " << p << " outlived its task";
  }
}

TEST(Kill, AKilledTaskGetsOneSigterm) {
  LocalCluster cluster("oneterm");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1);
  // A checkpoint handler that runs on every SIGTERM (and goes on: the grace period's SIGKILL ends
  // it), and a child in the task's process group.
  std::string terms = cluster.dir() + "/terms";
  JobId id = cluster.Submit(fmt::format(R"(
name: checkpointer
grace_period: 2s
tasks:
  - role: worker
    resources: {{gpus: 1}}
    command:
      - /usr/bin/python3
      - -c
      - |
        import signal, subprocess, sys, time
        child = subprocess.Popen(["sleep", "300"])
        def checkpoint(*_):
            with open(sys.argv[1], "a") as f:
                f.write("term\n")
            child.terminate()
        signal.signal(signal.SIGTERM, checkpoint)
        print("ready", flush=True)
        while True:
            time.sleep(0.01)
      - {}
)",
                                        terms));
  cluster.WaitForState(id, JobState::kRunning);
  ASSERT_TRUE(WaitFor([&] { return cluster.Logs(id).find("ready") != std::string::npos; }));
  ASSERT_EQ(cluster.Cohort({"kill", std::to_string(id)}).exit_code, 0);
  cluster.WaitForState(id, JobState::kKilled, std::chrono::seconds(20));
  EXPECT_EQ(ReadFileOrEmpty(terms), "term\n");
}

TEST(Kill, FailedTaskStopsTheRestOfItsGangAndRetries) {
  LocalCluster cluster("gangfail");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  JobId id = cluster.Submit(R"(
name: flaky
restart: {max_attempts: 2}
tasks:
  - role: worker
    replicas: 2
    resources: {gpus: 1}
    command: [sh, -c, 'if [ $COHORT_TASK_INDEX = 1 ]; then sleep 0.5; exit 3; fi; sleep 300']
)");
  Job job = cluster.WaitForState(id, JobState::kFailed, std::chrono::seconds(30));
  EXPECT_EQ(job.attempt, 2);
  ASSERT_EQ(job.history.size(), 2u);
  EXPECT_THAT(job.history[0].result, ::testing::HasSubstr("worker/1 exited with code 3"));
  EXPECT_EQ(job.tasks[0].state, TaskState::kKilled) << "worker/0 was stopped with its gang";
  auto wait = cluster.Cohort({"wait", std::to_string(id)});
  EXPECT_EQ(wait.exit_code, 1);
  EXPECT_THAT(wait.out, ::testing::HasSubstr("FAILED"));
}

}  // namespace
}  // namespace cohort::testing
