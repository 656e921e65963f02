// What watching jobs costs the master (issue 12, "Cost"; docs/performance.md): a local cluster
// (cohort up) running `--tasks` tasks that each print `--rate` cohort-metric points and as many
// log lines a second, while `--followers` clients follow logs (GET .../logs?follow=true, as a
// browser's log view does). Measures the master process's CPU (from /proc/PID/stat over the
// window) and its resident memory, and the latency of a chart request meanwhile.
//
//   build/bin/observability_bench [--tasks 100] [--rate 10] [--followers 20] [--seconds 30]
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>

#include "client/cohort_client.h"
#include "common/strings.h"
#include "os/process.h"

namespace {

namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;

std::string SelfDir() { return fs::read_symlink("/proc/self/exe").parent_path().string(); }

// utime + stime of a process, in seconds.
double CpuSeconds(pid_t pid) {
  std::string stat = cohort::ReadFileOrEmpty(fmt::format("/proc/{}/stat", pid));
  auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  auto fields = cohort::Split(stat.substr(close + 2), ' ');
  if (fields.size() < 13) return 0;
  double ticks = std::stod(std::string(fields[11])) + std::stod(std::string(fields[12]));
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// VmRSS of a process, in MiB.
double RssMiB(pid_t pid) {
  for (auto line :
       cohort::Split(cohort::ReadFileOrEmpty(fmt::format("/proc/{}/status", pid)), '\n')) {
    if (line.starts_with("VmRSS:"))
      return std::stod(std::string(cohort::Trim(line.substr(6)))) / 1024;
  }
  return 0;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The master's cost while tasks write metrics and clients follow logs"};
  int tasks = 100, rate = 10, followers = 20, seconds = 30, agents = 4;
  app.add_option("--tasks", tasks, "Tasks writing metrics")->capture_default_str();
  app.add_option("--rate", rate, "Points (and log lines) per task per second")
      ->capture_default_str();
  app.add_option("--followers", followers, "Clients following logs")->capture_default_str();
  app.add_option("--seconds", seconds, "Length of the measured window")->capture_default_str();
  app.add_option("--agents", agents, "Agents of the local cluster")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::string bin = SelfDir();
  std::string dir = fmt::format("/tmp/cohort-obs-bench-{}", ::getpid());
  int port = 19000 + ::getpid() % 1000;
  std::string url = fmt::format("http://127.0.0.1:{}", port);
  if (cohort::RunToCompletion({bin + "/cohort", "up", "--agents", std::to_string(agents),
                               "--gpus-per-agent", "0", "--cpus-per-agent", "64", "--port",
                               std::to_string(port), "--data-dir", dir}) != 0) {
    fmt::print(stderr, "cohort up failed; see {}\n", dir);
    return 1;
  }
  const std::string token(cohort::Trim(cohort::ReadFileOrEmpty(dir + "/master/admin-token")));
  pid_t master = cohort::ReadPidFile(dir + "/master.pid");
  auto client = cohort::client::CohortClient::Create(url, token);
  auto& c = **client;
  // One Python process a task: a loop that costs the machine little, unlike a shell's sleeps.
  const std::string loop = fmt::format(
      "import time, sys\\nperiod = 1.0 / {}\\ni = 0\\nnext_at = time.time()\\nwhile True:\\n"
      "    print('cohort-metric step=%d loss=%f' % (i, 1.0 / (i + 1)))\\n"
      "    print('step %d done' % i, flush=True)\\n    i += 1\\n    next_at += period\\n"
      "    time.sleep(max(0, next_at - time.time()))\\n",
      rate);
  std::vector<cohort::JobId> ids;
  fmt::print(stderr, "starting {} tasks...\n", tasks);
  for (int i = 0; i < tasks; ++i) {
    auto job = c.Submit(
        fmt::format("{{\"name\": \"writer-{}\", \"tasks\": [{{\"role\": \"main\", \"resources\": "
                    "{{\"cpus\": 0.1, \"memory\": \"64Mi\"}}, \"command\": [\"/usr/bin/python3\", "
                    "\"-u\", \"-c\", \"{}\"]}}]}}",
                    i, loop),
        {});
    if (!job.ok()) {
      fmt::print(stderr, "submit: {}\n", job.status().ToString());
      return 1;
    }
    ids.push_back(job->id);
  }
  for (auto id : ids) {
    auto j = c.GetJob(id);
    while (j.ok() && !j->running_at && !cohort::IsTerminal(j->state)) {
      j = c.WaitJob(id, j->version, std::chrono::seconds(30));
    }
  }
  std::this_thread::sleep_for(std::chrono::seconds(5));  // metrics and logs flowing

  std::atomic<bool> stop{false};
  std::atomic<int64_t> followed_bytes{0};
  std::vector<std::thread> threads;
  for (int f = 0; f < followers; ++f) {
    threads.emplace_back([&, f] {
      auto own = cohort::client::CohortClient::Create(url, token);
      cohort::JobId id = ids[static_cast<size_t>(f) % ids.size()];
      (void)(*own)->Logs(id, "", 0, true, [&](std::string_view data) {
        followed_bytes += static_cast<int64_t>(data.size());
        return !stop;
      });
    });
  }
  double cpu0 = CpuSeconds(master);
  auto t0 = Steady::now();
  std::vector<double> chart_ms;
  while (Steady::now() - t0 < std::chrono::seconds(seconds)) {
    auto t = Steady::now();
    auto chart = c.JobMetrics(ids[0], {{"tag", "loss"}, {"max_points", "1000"}});
    if (chart.ok())
      chart_ms.push_back(std::chrono::duration<double, std::milli>(Steady::now() - t).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  double wall = std::chrono::duration<double>(Steady::now() - t0).count();
  double cpu = CpuSeconds(master) - cpu0;
  double rss = RssMiB(master);
  auto series = c.JobMetrics(ids[0], {});
  int64_t points = 0;
  if (series.ok() && !(*series)["series"].empty()) points = (*series)["series"][0]["points"];
  stop = true;
  cohort::RunToCompletion({bin + "/cohort", "down", "--data-dir", dir});
  for (auto& t : threads) t.join();
  fs::remove_all(dir);

  fmt::print("\n{} tasks x {} points/s and log lines/s, {} log followers, {:.0f} s, {} CPUs\n\n",
             tasks, rate, followers, wall, std::thread::hardware_concurrency());
  fmt::print("| figure | value |\n|---|---|\n");
  fmt::print("| master CPU | {:.1f}% of one core |\n", 100 * cpu / wall);
  fmt::print("| master resident memory at the end | {:.0f} MiB |\n", rss);
  fmt::print("| chart request (1,000 rows) while it runs, median | {:.1f} ms |\n",
             Median(chart_ms));
  fmt::print("| points of one task's `loss` at the end | {} |\n", points);
  fmt::print("| log bytes the followers got | {} |\n", followed_bytes.load());
  return 0;
}
