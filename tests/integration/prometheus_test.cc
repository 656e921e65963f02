// GET /metrics read by a real Prometheus (Debian's /usr/bin/prometheus, from scripts/setup.sh):
// a local cluster, Prometheus scraping the master every second with a token of a user made for
// it (docs/observability.md, "Prometheus metrics"), and the cluster's figures queried back
// through Prometheus' own HTTP API.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "client/http_client.h"
#include "common/strings.h"
#include "model/json.h"
#include "os/process.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

constexpr const char* kPrometheus = "/usr/bin/prometheus";
constexpr int kAgents = 2;
constexpr int kGpusPerAgent = 2;

std::string UrlEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// Prometheus as a child of the test, stopped (SIGTERM, then SIGKILL) however the test ends.
class PrometheusServer {
 public:
  PrometheusServer(const std::string& dir, const std::string& master_target,
                   const std::string& token_file)
      : dir_(dir), port_(FreeLoopbackPort()) {
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ + "/prometheus.yml") << fmt::format(R"(global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: cohort
    metrics_path: /metrics
    authorization:
      credentials_file: {}
    static_configs:
      - targets: ['{}']
)",
                                                           token_file, master_target);
    auto pid = Spawn({kPrometheus, "--config.file=" + dir_ + "/prometheus.yml",
                      "--storage.tsdb.path=" + dir_ + "/tsdb",
                      fmt::format("--web.listen-address=127.0.0.1:{}", port_), "--log.level=warn"},
                     SpawnOptions{dir_ + "/prometheus.log", /*new_session=*/false, {}});
    EXPECT_TRUE(pid.ok()) << pid.status().ToString();
    pid_ = pid.ok() ? *pid : 0;
  }
  ~PrometheusServer() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    if (!WaitFor([&] { return ::waitpid(pid_, nullptr, WNOHANG) == pid_; },
                 std::chrono::seconds(10))) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  std::string url() const { return fmt::format("http://127.0.0.1:{}", port_); }
  std::string Log() const { return ReadFileOrEmpty(dir_ + "/prometheus.log"); }
  pid_t pid() const { return pid_; }

  // GET `target` of Prometheus' HTTP API, as JSON; null if it does not answer 200 with JSON.
  Json Get(const std::string& target) const {
    auto http = client::HttpClient::Create(url());
    if (!http.ok()) return nullptr;
    auto r = (*http)->Request("GET", target, {}, "application/json", std::chrono::seconds(5));
    if (!r.ok() || r->status != 200) return nullptr;
    auto doc = ParseJson(r->body);
    return doc.ok() ? *doc : Json(nullptr);
  }

  // The value of an instant query that yields one sample, as Prometheus writes it ("4"); "" if
  // it yields none or Prometheus does not answer.
  std::string Query(const std::string& promql) const {
    Json doc = Get("/api/v1/query?query=" + UrlEncode(promql));
    if (!doc.is_object() || doc["status"] != "success") return "";
    const Json& result = doc["data"]["result"];
    if (!result.is_array() || result.size() != 1) return "";
    return result[0]["value"][1].get<std::string>();
  }

 private:
  std::string dir_;
  int port_;
  pid_t pid_ = 0;
};

TEST(Prometheus, ScrapesTheMasterWithATokenAndQueriesBackWhatTheClusterHas) {
  ASSERT_EQ(::access(kPrometheus, X_OK), 0)
      << kPrometheus << " is missing: scripts/setup.sh installs Debian's prometheus package";
  LocalCluster cluster("prometheus");
  cluster.StartMaster();
  for (int i = 0; i < kAgents; ++i) cluster.StartAgent(fmt::format("node-{}", i), kGpusPerAgent);

  // Prometheus gets a token of its own, of a user who may only view the default team: what
  // /metrics needs is any user's token, never the admin's.
  auto user = cluster.Cohort({"user", "create", "prometheus", "--team", "default:viewer"});
  ASSERT_EQ(user.exit_code, 0) << user.err;
  auto token = cluster.Cohort({"token", "create", "--user", "prometheus"});
  ASSERT_EQ(token.exit_code, 0) << token.err;
  const std::string token_file = cluster.dir() + "/prometheus-token";
  std::ofstream(token_file) << Trim(token.out) << "\n";
  ::chmod(token_file.c_str(), 0600);
  // Without a token, /metrics is refused like every other call.
  auto anonymous = client::HttpClient::Create(cluster.url());
  ASSERT_TRUE(anonymous.ok());
  auto refused = (*anonymous)->Request("GET", "/metrics");
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_EQ(refused->status, 401);

  JobId id = cluster.Submit(R"(
name: holds-a-gpu
tasks:
  - role: worker
    resources: {gpus: 1, cpus: 1, memory: 256Mi}
    command: [sleep, "300"]
)");
  cluster.WaitForState(id, JobState::kRunning);

  std::string master_target = cluster.url().substr(std::string_view("http://").size());
  PrometheusServer prometheus(cluster.dir() + "/prometheus", master_target, token_file);
  ASSERT_GT(prometheus.pid(), 0);

  // The target is up once a scrape has parsed: a malformed line would leave it down, saying why.
  std::string last_error;
  bool up = WaitFor(
      [&] {
        Json targets = prometheus.Get("/api/v1/targets");
        if (!targets.is_object()) return false;
        for (const auto& t : targets["data"]["activeTargets"]) {
          last_error = t.value("lastError", "");
          if (t["health"] == "up") return true;
        }
        return false;
      },
      std::chrono::seconds(30));
  ASSERT_TRUE(up) << "last scrape error: " << last_error << "\nPrometheus' log:\n"
                  << prometheus.Log();

  // What the cluster has, read back through Prometheus.
  auto eventually = [&](const std::string& promql, const std::string& want) {
    std::string got;
    WaitFor(
        [&] {
          got = prometheus.Query(promql);
          return got == want;
        },
        std::chrono::seconds(15));
    EXPECT_EQ(got, want) << promql;
  };
  eventually("sum(cohort_gpus)", std::to_string(kAgents * kGpusPerAgent));
  eventually(R"(sum(cohort_gpus_allocated{team="default"}))", "1");
  eventually(R"(cohort_jobs{team="default",state="running"})", "1");
  eventually(R"(sum(cohort_node_state{state="ready"}))", std::to_string(kAgents));
  eventually(R"(cohort_team_gpus_used{team="default"})", "1");
  eventually(R"(sum(cohort_preemptions_total))", "0");  // a counter, every cause written
  // Histograms parse too: Prometheus' own scrapes are counted under the route's pattern, from
  // the second on (a scrape's answer is timed once it has been written).
  std::string scrapes;
  EXPECT_TRUE(WaitFor(
      [&] {
        scrapes = prometheus.Query(
            R"(cohort_api_request_duration_seconds_count{route="/metrics",code="2xx"})");
        return !scrapes.empty() && std::stod(scrapes) >= 1;
      },
      std::chrono::seconds(15)))
      << scrapes;
  EXPECT_NE(prometheus.Query("cohort_scheduling_pass_seconds_count"), "");
}

}  // namespace
}  // namespace cohort::testing
