// A stranger who opens more idle sockets than the master has file descriptors, and opens them
// again within 0.2 s of the master closing them, while the health check, a node's syncs and a real
// agent must stay prompt (docs/reliability.md, "Floods and hostile input").
#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "client/http_client.h"
#include "model/json.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr int kMasterFileLimit = 256;
constexpr int kIdleSockets = 400;  // more than the master has descriptors for

// Sockets connected to the master that never send a byte, half from the agents' own address,
// half from another; each one the master closes is opened again within 200 ms.
class Hoarder {
 public:
  explicit Hoarder(int port) : port_(port) {
    for (int i = 0; i < kIdleSockets; ++i) fds_.push_back(Open(i));
    thread_ = std::thread([this] { Run(); });
  }
  ~Hoarder() {
    stop_ = true;
    thread_.join();
    for (int fd : fds_) ::close(fd);
  }
  // Sockets the master closed (and were opened again).
  int64_t closed_by_master() const { return closed_; }

 private:
  int Open(int i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd, 0) << strerror(errno);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    ::inet_pton(AF_INET, i % 2 == 0 ? "127.0.0.1" : "127.0.0.2", &local.sin_addr);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)), 0) << strerror(errno);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0)
        << strerror(errno);
    return fd;
  }

  void Run() {
    std::vector<pollfd> polled(fds_.size());
    while (!stop_) {
      for (size_t i = 0; i < fds_.size(); ++i) polled[i] = pollfd{fds_[i], POLLIN, 0};
      ::poll(polled.data(), polled.size(), 100);
      for (size_t i = 0; i < fds_.size(); ++i) {
        if (polled[i].revents == 0) continue;  // it sends nothing, so anything is the end
        ::close(fds_[i]);
        fds_[i] = Open(static_cast<int>(i));
        ++closed_;
      }
      std::this_thread::sleep_for(100ms);
    }
  }

  int port_;
  std::vector<int> fds_;
  std::atomic<bool> stop_ = false;
  std::atomic<int64_t> closed_ = 0;
  std::thread thread_;
};

std::string MasterFileLimit(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/limits", pid));
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("Max open files")) return line;
  }
  return "";
}

int OpenDescriptors(pid_t pid) {
  int count = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator(fmt::format("/proc/{}/fd", pid))) {
    ++count;
  }
  return count;
}

std::string ProbeNode() {
  return Json{{"id", "probe"},
              {"address", "127.0.0.1"},
              {"cpus", 1},
              {"memory_bytes", 1 << 30},
              {"gpus", Json::array()},
              {"gpu_links", Json::array()},
              {"gpu_source", "declared"},
              {"ports", {{"first", 30000}, {"last", 30999}}},
              {"labels", Json::object()},
              {"agent_version", "0.1.0"}}
      .dump();
}

// How long each call takes, on a new connection each, as for a client whose connection was
// closed. Without a token when `token` is empty.
std::vector<double> TimeCalls(const LocalCluster& cluster, const std::string& token,
                              const std::string& method, const std::string& target,
                              const std::string& body, int calls) {
  std::vector<double> ms;
  for (int i = 0; i < calls; ++i) {
    auto http = token.empty() ? client::HttpClient::Create(cluster.url()) : cluster.Http(token);
    EXPECT_TRUE(http.ok());
    if (!http.ok()) return ms;
    auto start = std::chrono::steady_clock::now();
    auto r = (*http)->Request(method, target, body, "application/json", 5s);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) {
      EXPECT_EQ(r->status, 200) << target << ": " << r->body;
    }
    std::this_thread::sleep_for(50ms);
  }
  return ms;
}

std::string Describe(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  if (ms.empty()) return "none";
  return fmt::format("median {:.1f} ms, max {:.1f} ms ({})", ms[ms.size() / 2], ms.back(),
                     fmt::join(ms, ", "));
}

// The master started with `master_args`, the hoarder at work: what a new client gets.
void HealthAndSyncsStayPrompt(const std::string& name, std::vector<std::string> master_args,
                              const std::vector<std::string>& expected_log_lines = {}) {
  LocalCluster cluster(name, LocalClusterOptions{.master_open_files = kMasterFileLimit});
  cluster.StartMaster(std::move(master_args));
  EXPECT_THAT(MasterFileLimit(cluster.master_pid()),
              ::testing::MatchesRegex("Max open files +256 +256 +files *"));
  cluster.StartAgent("agent-0", 0);
  auto join = cluster.Http(cluster.join_token());
  ASSERT_TRUE(join.ok());
  auto joined = (*join)->Request("POST", "/api/v1/agents/register", ProbeNode());
  ASSERT_TRUE(joined.ok() && joined->status == 200) << (joined.ok() ? joined->body : "");
  std::string credential = (*ParseJson(joined->body))["credential"].get<std::string>();
  // Syncs only: the job below runs on the real agent.
  ASSERT_TRUE(cluster.client().DrainNode("probe", "a probe").ok());

  const int port = std::atoi(cluster.url().substr(cluster.url().rfind(':') + 1).c_str());
  Hoarder hoarder(port);
  std::this_thread::sleep_for(1s);  // the master has taken what it can of the sockets
  // Connections leave descriptors for the log files and the database, whatever the cap says.
  EXPECT_LE(OpenDescriptors(cluster.master_pid()), kMasterFileLimit - 32);

  std::vector<double> health = TimeCalls(cluster, "", "GET", "/api/v1/health", "", /*calls=*/10);
  std::vector<double> syncs =
      TimeCalls(cluster, credential, "POST", "/api/v1/agents/probe/sync?timeout_ms=0",
                R"({"applied_version": 0, "tasks": []})", /*calls=*/10);
  // A job runs on the real agent meanwhile: its syncs, log uploads and the job's end get through.
  JobId id = cluster.Submit("name: meanwhile\ntasks: [{role: w, command: [echo, done]}]\n");
  Job job = cluster.WaitForState(id, JobState::kSucceeded);
  EXPECT_EQ(job.state, JobState::kSucceeded) << job.message;
  EXPECT_EQ(cluster.Logs(id), "done\n");
  auto nodes = cluster.client().Nodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  for (const auto& n : (*nodes)["nodes"]) {
    if (n["id"] == "agent-0") {
      EXPECT_EQ(n["state"], "READY") << n.dump();
    }
  }

  std::cout << "health: " << Describe(health) << "\nnode syncs: " << Describe(syncs)
            << "\nsockets the master closed to make room: " << hoarder.closed_by_master()
            << std::endl;
  for (double ms : health) EXPECT_LT(ms, 100.0) << "health: " << Describe(health);
  for (double ms : syncs) EXPECT_LT(ms, 100.0) << "node syncs: " << Describe(syncs);
  EXPECT_GT(hoarder.closed_by_master(), kIdleSockets - kMasterFileLimit);
  std::ifstream log(cluster.dir() + "/master.log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("connections ran short: closed "));
  for (const std::string& line : expected_log_lines) EXPECT_THAT(text, HasSubstr(line));
}

// The connection cap the master derives from its file limit (the limit less 128) binds first.
TEST(IdleSockets, MoreIdleSocketsThanTheMastersFileLimitLeaveHealthAndSyncsPrompt) {
  HealthAndSyncsStayPrompt("idlesockets", {});
}

// A cap set above the file limit: descriptors run out first, and accepting makes room.
TEST(IdleSockets, OutOfFileDescriptorsHealthAndSyncsStayPrompt) {
  HealthAndSyncsStayPrompt("idlefds", {"--max-connections", "1000"},
                           {"out of file descriptors", "to keep 64 descriptors for files"});
}

}  // namespace
}  // namespace cohort::testing
