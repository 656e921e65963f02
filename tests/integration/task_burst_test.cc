// A burst of task exits on one node must not starve its agent (issue 26, item 4;
// docs/reliability.md, "The agent outlives its own tasks").
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "os/process.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

// Polls the node's state until stopped: every state it saw that was not READY, and the longest
// time the master went without hearing from it (last_seen not moving).
class NodeWatch {
 public:
  NodeWatch(LocalCluster& cluster, std::string node)
      : cluster_(cluster), node_(std::move(node)), thread_([this] { Loop(); }) {}
  ~NodeWatch() { Stop(); }

  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::string not_ready() {
    std::lock_guard lock(mu_);
    return not_ready_;
  }
  double longest_silence_s() {
    std::lock_guard lock(mu_);
    return longest_silence_s_;
  }

 private:
  void Loop() {
    auto client = client::CohortClient::Create(cluster_.url(), cluster_.admin_token(), {});
    if (!client.ok()) return;
    std::string last_seen;
    auto last_seen_moved = std::chrono::steady_clock::now();
    while (!stop_) {
      auto nodes = (*client)->Nodes();
      auto now = std::chrono::steady_clock::now();
      if (nodes.ok()) {
        for (const auto& n : (*nodes)["nodes"]) {
          if (n["id"] != node_) continue;
          std::lock_guard lock(mu_);
          std::string state = n["state"].get<std::string>();
          if (state != "READY" && not_ready_.find(state) == std::string::npos)
            not_ready_ += state + " ";
          std::string seen = n["last_seen"].get<std::string>();
          if (seen != last_seen) {
            longest_silence_s_ = std::max(
                longest_silence_s_, std::chrono::duration<double>(now - last_seen_moved).count());
            last_seen = seen;
            last_seen_moved = now;
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  LocalCluster& cluster_;
  const std::string node_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string not_ready_;
  double longest_silence_s_ = 0;
  std::thread thread_;
};

TEST(TaskBurst, ThousandTasksEndingAtOnceLeaveTheNodeReadyAndTheJobSucceeded) {
  LocalCluster cluster("burst");
  cluster.StartMaster();  // the default --node-timeout: 10s
  cluster.StartAgent("node", 0);
  // Every task waits for a shared lock that the test holds, so that all of them end at the
  // same instant when it lets go.
  std::string lock_path = cluster.dir() + "/release";
  int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(lock_fd, 0);
  ASSERT_EQ(::flock(lock_fd, LOCK_EX), 0);
  // 1,024 tasks fit the agent's 16 CPUs and 64Gi.
  JobId id = cluster.Submit(fmt::format(R"(
name: burst
tasks:
  - role: worker
    replicas: 1024
    resources: {{cpus: 10m, memory: 16Mi}}
    command: [flock, -s, {}, 'true']
)",
                                        lock_path));
  NodeWatch watch(cluster, "node");
  // Every task has started, and its command is flock, waiting for the lock.
  Job running = cluster.WaitForJob(
      id,
      [](const Job& j) {
        if (j.state != JobState::kRunning) return false;
        for (const auto& t : j.tasks) {
          if (t.pid == 0 || CommandLine(static_cast<pid_t>(t.pid)).rfind("flock", 0) != 0)
            return false;
        }
        return true;
      },
      std::chrono::seconds(90));
  ASSERT_EQ(running.state, JobState::kRunning) << running.message;
  ASSERT_EQ(running.tasks.size(), 1024u);

  auto released_at = std::chrono::steady_clock::now();
  ::close(lock_fd);
  Job done = cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(60));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - released_at).count();
  watch.Stop();
  std::printf(
      "1024 tasks ended at once: the job ended %.1f s later; the longest the master went "
      "without hearing from the node: %.1f s\n",
      seconds, watch.longest_silence_s());
  EXPECT_EQ(done.state, JobState::kSucceeded) << done.message;
  EXPECT_EQ(done.attempt, 1) << "no task may have been lost";
  EXPECT_EQ(watch.not_ready(), "") << "the node must stay READY throughout";
}

}  // namespace
}  // namespace cohort::testing
