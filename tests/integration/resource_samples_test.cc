// GPU and host metrics end to end (docs/observability.md, "GPU and host metrics"): an agent on
// the fake NVML, whose load the test changes through FAKE_NVML_UTILIZATION_FILE while it runs,
// and an agent with declared GPUs, which report no utilisation at all; the figures in
// GET /api/v1/nodes, Prometheus' /metrics and `cohort nodes`, and a task that burns a core in
// GET /api/v1/jobs/{id}/usage.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include "model/json.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

StatusOr<Json> Get(LocalCluster& cluster, const std::string& path) {
  auto http = cluster.Http();
  if (!http.ok()) return http.status();
  auto r = (*http)->Request("GET", path);
  if (!r.ok()) return r.status();
  if (r->status != 200) return Status::Internal(fmt::format("{}: {} {}", path, r->status, r->body));
  if (path == "/metrics") return Json(r->body);
  return ParseJson(r->body);
}

// The GPU of GPU index `gpu` of node `node` in GET /api/v1/nodes; null if absent.
Json GpuOf(LocalCluster& cluster, const std::string& node, int gpu) {
  auto nodes = Get(cluster, "/api/v1/nodes");
  if (!nodes.ok()) return nullptr;
  for (const auto& n : (*nodes)["nodes"]) {
    if (n["id"] != node) continue;
    for (const auto& g : n["gpus"]) {
      if (g["index"] == gpu) return g;
    }
  }
  return nullptr;
}

TEST(ResourceSamples, GpuLoadFromNvmlReachesTheApiAndPrometheusAndDeclaredGpusReportNone) {
  LocalCluster cluster("resource-samples");
  const std::string load_file = cluster.dir() + "/gpu-load";
  std::ofstream(load_file) << "0 37 1073741824\n1 90 2048\n";
  cluster.StartMaster();
  cluster.StartAgent("nvml-node", /*gpus=*/-1,
                     {"--nvml-library", FakeNvmlLibrary(), "--sample-interval", "1s"},
                     {{"FAKE_NVML_GPUS", "2"}, {"FAKE_NVML_UTILIZATION_FILE", load_file}});
  cluster.StartAgent("declared-node", /*gpus=*/1, {"--sample-interval", "1s"});

  ASSERT_TRUE(WaitFor([&] { return GpuOf(cluster, "nvml-node", 0)["utilization"] == 37; }))
      << GpuOf(cluster, "nvml-node", 0).dump();
  Json gpu0 = GpuOf(cluster, "nvml-node", 0);
  EXPECT_EQ(gpu0["memory_used_bytes"], 1073741824);
  EXPECT_TRUE(gpu0["sampled_at"].is_string());
  ASSERT_TRUE(WaitFor([&] { return GpuOf(cluster, "nvml-node", 1)["utilization"] == 90; }));
  EXPECT_EQ(GpuOf(cluster, "nvml-node", 1)["memory_used_bytes"], 2048);

  // The declared node has synced many times since, and its GPU is still unknown, not 0.
  Json declared = GpuOf(cluster, "declared-node", 0);
  ASSERT_TRUE(declared.is_object());
  EXPECT_TRUE(declared["utilization"].is_null()) << declared.dump();
  EXPECT_TRUE(declared["memory_used_bytes"].is_null()) << declared.dump();

  auto metrics = Get(cluster, "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  std::string text = metrics->get<std::string>();
  EXPECT_THAT(text, HasSubstr("cohort_gpu_utilization_ratio{node=\"nvml-node\",gpu=\"0\"} 0.37\n"));
  EXPECT_THAT(text, HasSubstr("cohort_gpu_utilization_ratio{node=\"nvml-node\",gpu=\"1\"} 0.9\n"));
  EXPECT_THAT(text,
              HasSubstr("cohort_gpu_memory_used_bytes{node=\"nvml-node\",gpu=\"0\"} 1073741824\n"));
  EXPECT_THAT(text, Not(HasSubstr("cohort_gpu_utilization_ratio{node=\"declared-node\"")));
  EXPECT_THAT(text, Not(HasSubstr("cohort_gpu_memory_used_bytes{node=\"declared-node\"")));

  // The load changes while the agent runs.
  std::ofstream(load_file) << "0 5 4096\n1 90 2048\n";
  ASSERT_TRUE(WaitFor([&] { return GpuOf(cluster, "nvml-node", 0)["utilization"] == 5; }));
  ASSERT_TRUE(WaitFor([&] {
    auto m = Get(cluster, "/metrics");
    return m.ok() && m->get<std::string>().find(
                         "cohort_gpu_utilization_ratio{node=\"nvml-node\",gpu=\"0\"} 0.05\n") !=
                         std::string::npos;
  }));

  auto nodes = cluster.Cohort({"nodes"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_THAT(nodes.out, HasSubstr("UTIL"));
  EXPECT_THAT(nodes.out, HasSubstr("5%"));
  EXPECT_THAT(nodes.out, HasSubstr("90%"));
}

// The CPUs the kernel charged `pid` on average since it started: its user and system time over
// its age (/proc/<pid>/stat, proc(5)); 0 if it cannot be read.
double ChargedCores(int64_t pid) {
  std::ifstream stat_file(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(stat_file)), {});
  size_t close = stat.rfind(')');
  std::ifstream uptime_file("/proc/uptime");
  double uptime = 0;
  if (close == std::string::npos || !(uptime_file >> uptime)) return 0;
  std::istringstream fields(stat.substr(close + 2));  // from field 3, the state
  std::vector<std::string> f{std::istream_iterator<std::string>(fields), {}};
  if (f.size() < 20) return 0;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double cpu = (std::stod(f[11]) + std::stod(f[12])) / ticks;  // utime, stime
  const double age = uptime - std::stod(f[19]) / ticks;              // starttime
  return age > 0 ? cpu / age : 0;
}

TEST(ResourceSamples, ATaskBurningACoreShowsAboutOneCoreAndItsMemory) {
  LocalCluster cluster("task-samples");
  cluster.StartMaster();
  cluster.StartAgent("node", /*gpus=*/1, {"--sample-interval", "1s"});
  JobId id = cluster.Submit(R"(
name: burner
tasks: [{role: main, resources: {gpus: 1, cpus: 1}, command: [python3, -c, 'while True: pass']}]
)");
  cluster.WaitForState(id, JobState::kRunning);
  const std::string path = fmt::format("/api/v1/jobs/{}/usage", id);
  Json task;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto usage = Get(cluster, path);
        if (!usage.ok() || (*usage)["tasks"].empty()) return false;
        task = (*usage)["tasks"][0];
        return task["samples"].size() >= 4;
      },
      std::chrono::seconds(30)))
      << task.dump();
  EXPECT_EQ(task["task"], "main/0");
  EXPECT_EQ(task["node"], "node");
  double sum = 0;
  int rated = 0;
  for (const auto& s : task["samples"]) {
    EXPECT_GT(s["rss_bytes"].get<int64_t>(), 0) << s.dump();
    if (s["cpus"].is_null()) continue;  // the first has no rate yet
    sum += s["cpus"].get<double>();
    ++rated;
  }
  ASSERT_GT(rated, 0) << task.dump();
  // As much as the kernel charged the task: tasks run at a lower priority than the agent
  // (docs/reliability.md, "The agent outlives its own tasks"), so on a machine shared with builds
  // and other tests the burner may get well under a core; what it got is what must show.
  auto job = cluster.client().GetJob(id);
  ASSERT_TRUE(job.ok());
  const double charged = ChargedCores(job->tasks.at(0).pid);
  ASSERT_GT(charged, 0.0) << "no CPU charged to pid " << job->tasks.at(0).pid;
  EXPECT_GT(sum / rated, 0.5 * charged - 0.1) << task.dump() << " charged " << charged;
  EXPECT_LT(sum / rated, 1.5 * charged + 0.1) << task.dump() << " charged " << charged;
  EXPECT_LT(sum / rated, 1.5) << task.dump();
  EXPECT_TRUE(task["cpus"].is_number()) << task.dump();
  EXPECT_GT(task["rss_bytes"].get<int64_t>(), 0);
  ASSERT_EQ(task["gpus"].size(), 1u);
  EXPECT_TRUE(task["gpus"][0]["utilization"].is_null()) << "a declared GPU: unknown";

  ASSERT_EQ(cluster.Cohort({"kill", std::to_string(id)}).exit_code, 0);
  cluster.WaitForState(id, JobState::kKilled);
}

}  // namespace
}  // namespace cohort::testing
