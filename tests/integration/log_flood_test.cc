// A task that floods its output must not flood the master: health checks stay fast, the
// master's memory and its stored log stay bounded, and the job's end is seen promptly
// (docs/architecture.md, "Task logs"). Each test prints what it measured.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>

#include "client/http_client.h"
#include "common/strings.h"
#include "os/process.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr int64_t kMi = 1024 * 1024;

// Bytes of the *.log files under `dir`, as their sizes or as disk blocks; files may vanish
// meanwhile.
int64_t StoredBytes(const std::string& dir, bool blocks = false) {
  int64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    struct stat st {};
    if (it->path().extension() == ".log" && ::lstat(it->path().c_str(), &st) == 0 &&
        S_ISREG(st.st_mode)) {
      total += blocks ? static_cast<int64_t>(st.st_blocks) * 512 : st.st_size;
    }
  }
  return total;
}

int64_t RssBytes(pid_t pid) {
  for (const auto& line : Split(ReadFileOrEmpty(fmt::format("/proc/{}/status", pid)), '\n')) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
  }
  return 0;
}

// Watches the master from threads while a flood runs: the latency of /api/v1/health, the
// master's resident memory, the bytes it stores for the job, and the task's output on the
// agent's disk.
class Monitor {
 public:
  Monitor(const LocalCluster& cluster, JobId job, std::string agent_task_dir)
      : cluster_(cluster), job_(job), agent_task_dir_(std::move(agent_task_dir)) {
    health_ = std::thread([this] { PollHealth(); });
    sizes_ = std::thread([this] { PollSizes(); });
  }
  ~Monitor() { Stop(); }

  void Stop() {
    stop_ = true;
    if (health_.joinable()) health_.join();
    if (sizes_.joinable()) sizes_.join();
  }

  milliseconds max_health_latency() const { return milliseconds(max_latency_ms_.load()); }
  int health_checks() const { return checks_; }
  int health_failures() const { return failures_; }
  int64_t max_rss() const { return max_rss_; }
  int64_t max_stored() const { return max_stored_; }
  int64_t max_agent_disk() const { return max_agent_disk_; }

 private:
  void PollHealth() {
    auto http = cluster_.Http();
    ASSERT_TRUE(http.ok());
    while (!stop_) {
      auto start = steady_clock::now();
      auto r = (*http)->Request("GET", "/api/v1/health", {}, "application/json",
                                std::chrono::seconds(60));
      auto ms = std::chrono::duration_cast<milliseconds>(steady_clock::now() - start).count();
      ++checks_;
      if (!r.ok() || r->status != 200) ++failures_;
      max_latency_ms_ = std::max<int64_t>(max_latency_ms_, ms);
      std::this_thread::sleep_for(milliseconds(20));
    }
  }

  void PollSizes() {
    std::string logs = fmt::format("{}/master/logs/{}", cluster_.dir(), job_);
    while (!stop_) {
      max_rss_ = std::max(max_rss_.load(), RssBytes(cluster_.master_pid()));
      max_stored_ = std::max(max_stored_.load(), StoredBytes(logs));
      max_agent_disk_ = std::max(max_agent_disk_.load(), StoredBytes(agent_task_dir_, true));
      std::this_thread::sleep_for(milliseconds(50));
    }
  }

  const LocalCluster& cluster_;
  JobId job_;
  std::string agent_task_dir_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> max_latency_ms_{0};
  std::atomic<int> checks_{0};
  std::atomic<int> failures_{0};
  std::atomic<int64_t> max_rss_{0};
  std::atomic<int64_t> max_stored_{0};
  std::atomic<int64_t> max_agent_disk_{0};
  std::thread health_;
  std::thread sizes_;
};

// Follows a job's logs on its own connection, keeping only a count and the first bytes.
class Follower {
 public:
  Follower(const std::string& url, const std::string& token, JobId job) {
    thread_ = std::thread([this, url, token, job] {
      auto c = client::CohortClient::Create(url, token);
      ASSERT_TRUE(c.ok());
      status_ = (*c)->Logs(job, "", 0, true, [this](std::string_view data) {
        if (head_.size() < 256) head_.append(data.substr(0, 256 - head_.size()));
        newlines_ += std::count(data.begin(), data.end(), '\n');
        bytes_ += static_cast<int64_t>(data.size());
        return true;
      });
    });
  }
  void Join() { thread_.join(); }
  int64_t bytes() const { return bytes_; }
  int64_t newlines() const { return newlines_; }
  const std::string& head() const { return head_; }
  const Status& status() const { return status_; }

 private:
  std::thread thread_;
  Status status_ = Status::Ok();
  std::string head_;
  int64_t bytes_ = 0;
  int64_t newlines_ = 0;
};

// What a flood leaves behind, measured.
struct Figures {
  milliseconds max_health_latency{0};
  int64_t max_rss = 0;
  int64_t max_stored = 0;
  int64_t final_stored = 0;
  int64_t max_agent_disk = 0;
  milliseconds end_delay{0};  // the task's exit to the job's end seen by a client
};

std::string Describe(const std::string& name, const Figures& f) {
  return fmt::format(
      "{}: max health latency {} ms, master max RSS {:.1f} MiB, stored max {:.1f} MiB "
      "(final {:.1f} MiB), agent disk max {:.1f} MiB, end seen {} ms after the task's exit",
      name, f.max_health_latency.count(), static_cast<double>(f.max_rss) / kMi,
      static_cast<double>(f.max_stored) / kMi, static_cast<double>(f.final_stored) / kMi,
      static_cast<double>(f.max_agent_disk) / kMi, f.end_delay.count());
}

// Runs one single-task job under the monitor with three followers; returns the figures and
// the followers, which have all finished.
Figures Flood(LocalCluster& cluster, const std::string& command,
              std::vector<std::unique_ptr<Follower>>& followers) {
  JobId id = cluster.Submit(fmt::format(R"(
name: flood
tasks:
  - role: worker
    resources: {{gpus: 1}}
    command: [sh, -c, '{}']
)",
                                        command));
  std::string task_dir = fmt::format("{}/tasks/{}.1.worker.0", cluster.AgentDir("node-a"), id);
  Monitor monitor(cluster, id, task_dir);
  for (int i = 0; i < 3; ++i)
    followers.push_back(std::make_unique<Follower>(cluster.url(), cluster.admin_token(), id));
  Job job = cluster.WaitForJob(
      id, [](const Job& j) { return IsTerminal(j.state); }, std::chrono::seconds(120));
  Timestamp seen = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  Figures f;
  EXPECT_EQ(job.state, JobState::kSucceeded) << job.message;
  if (!job.tasks.empty() && job.tasks[0].finished_at) {
    f.end_delay = std::chrono::duration_cast<milliseconds>(seen - *job.tasks[0].finished_at);
  }
  for (auto& follower : followers) follower->Join();
  monitor.Stop();
  f.max_health_latency = monitor.max_health_latency();
  f.max_rss = monitor.max_rss();
  f.max_stored = monitor.max_stored();
  f.final_stored = StoredBytes(fmt::format("{}/master/logs/{}", cluster.dir(), id));
  f.max_agent_disk = monitor.max_agent_disk();
  EXPECT_GT(monitor.health_checks(), 10);
  EXPECT_EQ(monitor.health_failures(), 0);
  for (auto& follower : followers) EXPECT_TRUE(follower->status().ok());
  return f;
}

// 200 MB on one line, followed by three clients: every follower gets all of it, in pieces,
// while the master stays responsive and small.
TEST(LogFlood, AHugeLineWithoutNewlineIsStreamedInBoundedMemory) {
  LocalCluster cluster("flood-line");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1);
  constexpr int64_t kBytes = 200'000'000;
  std::vector<std::unique_ptr<Follower>> followers;
  Figures f =
      Flood(cluster, fmt::format("head -c {} /dev/zero | tr \"\\\\0\" x", kBytes), followers);
  fmt::print("{}\n", Describe("200 MB line", f));
  for (auto& follower : followers) {
    EXPECT_EQ(follower->bytes(), kBytes + 1) << "every byte, and the newline added at the end";
    EXPECT_EQ(follower->head().substr(0, 8), "xxxxxxxx");
  }
  // The CLI passes the line through as it comes, without holding it.
  auto cli =
      RunCommand({"/bin/sh", "-c", BinDir() + "/cohort logs 1 | wc -c"},
                 {{"COHORT_MASTER", cluster.url()}, {"COHORT_TOKEN", cluster.admin_token()}});
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(std::string(Trim(cli.out)), std::to_string(kBytes + 1));
  struct rusage usage {};
  ::getrusage(RUSAGE_CHILDREN, &usage);  // the largest child waited for: the CLI, or less
  EXPECT_LT(usage.ru_maxrss * 1024, 100 * kMi);
  EXPECT_LT(f.max_health_latency, milliseconds(500));
  EXPECT_LT(f.max_rss, 300 * kMi);
  EXPECT_LT(f.end_delay, milliseconds(3000));
}

// `yes` for a few seconds with small log limits: the master keeps the most recent output and
// says how much it dropped, the agent's disk holds little more than its limit, and the job's
// end does not wait for gigabytes to be shipped.
TEST(LogFlood, YesIsCappedAndItsEndIsReportedPromptly) {
  LocalCluster cluster("flood-yes");
  cluster.StartMaster({"--log-limit", "8Mi"});
  cluster.StartAgent("node-a", 1, {"--log-limit", "16Mi"});
  std::vector<std::unique_ptr<Follower>> followers;
  Figures f = Flood(cluster, "timeout 5 yes; true", followers);
  fmt::print("{}\n", Describe("yes", f));
  constexpr int64_t kSegment = kMi;  // an eighth of the limit
  EXPECT_LE(f.max_stored, 8 * kMi + kSegment);
  EXPECT_LE(f.final_stored, 8 * kMi);
  // 16Mi, and what yes writes between two trims: 50 ms, but much more when the machine is
  // starved (272 MiB was seen with other builds running). Untrimmed, 5 s of yes is about 4.5 GB.
  EXPECT_LT(f.max_agent_disk, 1024 * kMi) << "16Mi, and what yes writes between two trims";
  EXPECT_LT(f.max_health_latency, milliseconds(500));
  EXPECT_LT(f.max_rss, 300 * kMi);
  EXPECT_LT(f.end_delay, milliseconds(3000));
  // Followers see the output as it comes, and a marker wherever the agent or the master
  // dropped some.
  for (auto& follower : followers) {
    EXPECT_THAT(follower->head(),
                ::testing::MatchesRegex("(\\[cohort: [0-9.]+ ?(bytes|[KMG]iB) of earlier output "
                                        "dropped \\(log limit 8MiB\\)\\]\n|y\n|\n)+y?"));
    EXPECT_GT(follower->newlines(), 1000);
  }
  // A reader who comes later is told what it missed, then gets the most recent output.
  std::string log = cluster.Logs(1);
  // What is kept is the last 8 MiB, shipped whole after the task's end: one gap, at the start.
  EXPECT_THAT(log, ::testing::MatchesRegex(
                       "\\[cohort: [0-9.]+[MG]iB of earlier output dropped \\(log limit "
                       "8MiB\\)\\]\n\n?(y\n)+"));
  EXPECT_LE(log.size(), static_cast<size_t>(8 * kMi + 100));
}

TEST(LogFlood, LogLimitsAreCheckedWhereTheyAreGiven) {
  auto master = RunCommand({BinDir() + "/cohortd", "master", "--log-limit", "1k", "--data-dir",
                            "/tmp/cohort-log-limit-never-created"});
  EXPECT_EQ(master.exit_code, 2);
  EXPECT_THAT(master.err, ::testing::HasSubstr("--log-limit: must be at least 64Ki"));
  auto agent = RunCommand({BinDir() + "/cohortd", "agent", "--log-limit", "lots", "--gpus", "0",
                           "--data-dir", "/tmp/cohort-log-limit-never-created"});
  EXPECT_EQ(agent.exit_code, 2);
  EXPECT_THAT(agent.err, ::testing::HasSubstr("--log-limit: \"lots\" is not a size"));
}

}  // namespace
}  // namespace cohort::testing
