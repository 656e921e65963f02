// A task's memory request is its limit where the node's cgroups allow it, and a fenced job's old
// attempt does not outlive an agent's loss of the master by more than its grace period (issue 26,
// item 8; docs/reliability.md, "Fenced jobs"; docs/job-spec.md, "resources").
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "os/memory_cgroup.h"
#include "os/process.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;

// A TCP relay on loopback between one agent and the master: cutting it closes every connection
// and refuses new ones, as a broken network link would for that agent alone.
class CuttableLink {
 public:
  explicit CuttableLink(int to_port) : to_port_(to_port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(listener_, 64);
    socklen_t len = sizeof(addr);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    relay_ = std::thread([this] { Relay(); });
  }
  ~CuttableLink() {
    done_ = true;
    relay_.join();
    for (auto& [a, b] : pairs_) ::close(a), ::close(b);
    if (listener_ >= 0) ::close(listener_);
  }
  std::string url() const { return fmt::format("http://127.0.0.1:{}", port_); }
  void Cut() { cut_ = true; }

 private:
  void Relay() {
    while (!done_) {
      if (cut_) {
        for (auto& [a, b] : pairs_) ::close(a), ::close(b);
        pairs_.clear();
        if (listener_ >= 0) ::close(listener_);
        listener_ = -1;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      std::vector<pollfd> fds{{listener_, POLLIN, 0}};
      for (auto& [a, b] : pairs_) {
        fds.push_back({a, POLLIN, 0});
        fds.push_back({b, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        int in = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (in >= 0) {
          int out = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
          sockaddr_in addr{};
          addr.sin_family = AF_INET;
          addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
          addr.sin_port = htons(static_cast<uint16_t>(to_port_));
          if (::connect(out, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
            pairs_.push_back({in, out});
          } else {
            ::close(in), ::close(out);
          }
        }
      }
      std::vector<size_t> closed;
      for (size_t i = 0; i < pairs_.size(); ++i) {
        for (int side = 0; side < 2; ++side) {
          const pollfd& p = fds[1 + 2 * i + side];
          if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
          int from = side == 0 ? pairs_[i].first : pairs_[i].second;
          int to = side == 0 ? pairs_[i].second : pairs_[i].first;
          char buf[65536];
          ssize_t n = ::read(from, buf, sizeof(buf));
          if (n <= 0 || ::write(to, buf, static_cast<size_t>(n)) != n) {
            closed.push_back(i);
            break;
          }
        }
      }
      for (auto it = closed.rbegin(); it != closed.rend(); ++it) {
        ::close(pairs_[*it].first), ::close(pairs_[*it].second);
        pairs_.erase(pairs_.begin() + static_cast<std::ptrdiff_t>(*it));
      }
    }
  }

  int to_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> cut_{false};
  std::atomic<bool> done_{false};
  // (agent's side, master's side); only the relay thread touches them until it is joined.
  std::vector<std::pair<int, int>> pairs_;
  std::thread relay_;
};

std::string Sleeper(const std::string& name, bool fenced) {
  return fmt::format(R"(
name: {}
tasks:
  - role: worker
    resources: {{gpus: 1, cpus: 1}}
    command: [sleep, "600"]
restart: {{max_attempts: 3{}}}
grace_period: 2s
)",
                     name, fenced ? ", fence: true" : "");
}

// The agent of node-a alone loses the master: the master declares node-a LOST after the node
// timeout and starts the fenced job's next attempt on node-b. The fenced job's old task is
// stopped by its agent on its own by then (it ran 56-68 s beside the new attempt before); the
// other job's old task keeps running, as it always did, until the link is back.
TEST(FenceTest, AnAgentCutOffFromTheMasterStopsItsFencedTasksBeforeTheNextAttemptStarts) {
  constexpr auto kNodeTimeout = std::chrono::seconds(6);
  constexpr auto kGrace = std::chrono::seconds(2);
  LocalCluster cluster("fence");
  cluster.StartMaster({"--node-timeout", "6s"});
  const int master_port = std::atoi(cluster.url().substr(cluster.url().rfind(':') + 1).c_str());
  CuttableLink link(master_port);
  cluster.RouteAgentsThrough(link.url());
  cluster.StartAgent("node-a", 2);
  cluster.RouteAgentsThrough("");

  JobId fenced = cluster.Submit(Sleeper("fenced", true));
  JobId plain = cluster.Submit(Sleeper("plain", false));
  auto running_with_pid = [](const Job& j) {
    return j.state == JobState::kRunning && j.tasks.size() == 1 && j.tasks[0].pid != 0;
  };
  Job f1 = cluster.WaitForJob(fenced, running_with_pid);
  Job p1 = cluster.WaitForJob(plain, running_with_pid);
  ASSERT_EQ(f1.state, JobState::kRunning);
  ASSERT_EQ(p1.state, JobState::kRunning);
  ASSERT_EQ(f1.tasks[0].node_id, "node-a");
  ASSERT_EQ(p1.tasks[0].node_id, "node-a");
  const pid_t fenced_pid = static_cast<pid_t>(f1.tasks[0].pid);
  const pid_t plain_pid = static_cast<pid_t>(p1.tasks[0].pid);
  cluster.StartAgent("node-b", 2);  // where the next attempts go

  const auto cut_at = Clock::now();
  link.Cut();
  // The old task's end and the new attempt's start, each as soon as it is seen.
  std::optional<Clock::time_point> old_ended, next_running;
  const auto deadline = cut_at + std::chrono::seconds(40);
  while ((!old_ended || !next_running) && Clock::now() < deadline) {
    if (!old_ended && !ProcessAlive(fenced_pid)) old_ended = Clock::now();
    if (!next_running) {
      auto job = cluster.client().GetJob(fenced);
      if (job.ok() && job->attempt == 2 && running_with_pid(*job)) next_running = Clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(old_ended) << "the fenced task still runs 40 s after its agent was cut off\n"
                         << ReadFileOrEmpty(cluster.AgentLog("node-a"));
  ASSERT_TRUE(next_running) << "the fenced job's next attempt never ran";
  auto secs = [&](Clock::time_point t) {
    return std::chrono::duration<double>(t - cut_at).count();
  };
  std::printf("cut at 0 s; fenced task ended at %.1f s; next attempt running at %.1f s\n",
              secs(*old_ended), secs(*next_running));
  EXPECT_LE(*old_ended, cut_at + kNodeTimeout + kGrace + std::chrono::seconds(2))
      << "within the node timeout and the grace period of the cut";
  EXPECT_LE(*old_ended, *next_running + kGrace)
      << "the old attempt and the new overlap by at most the grace period";
  EXPECT_TRUE(ProcessAlive(plain_pid)) << "a job that did not ask to be fenced keeps running";
  EXPECT_THAT(ReadFileOrEmpty(cluster.AgentLog("node-a")),
              HasSubstr("fenced: cut off from the master for"));
  EXPECT_THAT(cluster.EventsText(fenced), HasSubstr("node node-a was silent"));
}

// Where this machine enforces memory requests (root, a memory controller), a task that touches
// far more than it asked for is ended by the kernel, and the job says why; one that stays under
// its request runs to the end.
TEST(MemoryLimitTest, ATaskPastItsMemoryRequestIsKilledWithTheReason) {
  auto cgroups = MemoryCgroups::Find();
  if (!cgroups.ok())
    GTEST_SKIP() << "memory requests are not enforced here: " << cgroups.status().message();
  LocalCluster cluster("memlimit");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1);
  EXPECT_THAT(ReadFileOrEmpty(cluster.AgentLog("node-a")),
              HasSubstr("memory requests are enforced as limits: cgroup v"));
  // Touches 300 MB, page by page; reports how far it got.
  const std::string hog = R"spec(
name: hog
tasks:
  - role: worker
    resources: {gpus: 0, cpus: 1, memory: 64Mi}
    command: [python3, -c, "b = bytearray(300 * 1024 * 1024); print('touched', len(b), flush=True)"]
restart: {max_attempts: 1}
)spec";
  JobId id = cluster.Submit(hog);
  Job job = cluster.WaitForJob(id, [](const Job& j) { return IsTerminal(j.state); });
  ASSERT_EQ(job.state, JobState::kFailed) << job.message;
  EXPECT_EQ(job.tasks[0].signal, 9);
  EXPECT_THAT(job.message, HasSubstr("exceeded its memory limit of 64 MiB (the task's memory "
                                     "request); killed by the kernel's OOM killer"));
  EXPECT_THAT(cluster.EventsText(id), HasSubstr("exceeded its memory limit of 64 MiB"));
  std::string logs = cluster.Logs(id);
  EXPECT_THAT(logs, Not(HasSubstr("touched"))) << "it never got its 300 MB";
  auto status = cluster.Cohort({"status", std::to_string(id)});
  EXPECT_THAT(status.out, HasSubstr("exceeded its memory limit of 64 MiB"));

  const std::string modest = R"spec(
name: modest
tasks:
  - role: worker
    resources: {gpus: 0, cpus: 1, memory: 256Mi}
    command: [python3, -c, "b = bytearray(64 * 1024 * 1024); print('touched', len(b), flush=True)"]
restart: {max_attempts: 1}
)spec";
  JobId ok = cluster.Submit(modest);
  Job done = cluster.WaitForJob(ok, [](const Job& j) { return IsTerminal(j.state); });
  EXPECT_EQ(done.state, JobState::kSucceeded) << done.message;
  EXPECT_THAT(cluster.Logs(ok), HasSubstr("touched 67108864"));
}

}  // namespace
}  // namespace cohort::testing
