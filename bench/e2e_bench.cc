// End-to-end benchmark on a local cluster (cohort up): how long from submission until every task
// of a job runs, for single tasks and 4-task gangs, and how many trivial jobs per second the
// cluster gets through. Prints a table; docs/performance.md records this machine's figures.
//
//   build/bin/e2e_bench [--jobs 100] [--gangs 100] [--burst 500] [--agents 4] [--gpus 8]
#include <fmt/format.h>
#include <pwd.h>
#include <sys/wait.h>
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
using cohort::Duration;
using cohort::Job;
using cohort::JobState;
using cohort::RunToCompletion;

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::string SelfDir() { return fs::read_symlink("/proc/self/exe").parent_path().string(); }

std::string Spec(const std::string& name, int replicas, int gpus, const std::string& cmd) {
  return fmt::format(
      "{{\"name\": \"{}\", \"tasks\": [{{\"role\": \"worker\", \"replicas\": {}, "
      "\"resources\": {{\"gpus\": {}, \"cpus\": 0.1, \"memory\": \"64Mi\"}}, "
      "\"command\": [\"sh\", \"-c\", \"{}\"]}}]}}",
      name, replicas, gpus, cmd);
}

// Submits one job at a time into an idle cluster, waits until all its tasks run, then kills it
// and waits until its GPUs are free again, so that no figure includes queueing. Returns the
// master's submit-to-running latency of each, in milliseconds.
std::vector<double> MeasureStart(cohort::client::CohortClient& c, int count, int replicas,
                                 std::vector<double>* observed) {
  std::vector<double> latencies;
  for (int i = 0; i < count; ++i) {
    auto begin = std::chrono::steady_clock::now();
    auto job = c.Submit(Spec("latency", replicas, 1, "sleep 600"), {});
    if (!job.ok()) {
      fmt::print(stderr, "submit: {}\n", job.status().ToString());
      std::exit(1);
    }
    Job j = *job;
    while (!j.running_at && !cohort::IsTerminal(j.state)) {
      auto next = c.WaitJob(j.id, j.version, std::chrono::seconds(10));
      if (!next.ok()) std::exit(1);
      j = *next;
    }
    auto seen = std::chrono::steady_clock::now();
    if (!j.running_at) {
      fmt::print(stderr, "job {} ended without running: {}\n", j.id, j.message);
      std::exit(1);
    }
    latencies.push_back(static_cast<double>((*j.running_at - j.submitted_at).count()) / 1000.0);
    observed->push_back(std::chrono::duration<double, std::milli>(seen - begin).count());
    if (!c.Kill(j.id).ok()) std::exit(1);
    while (!cohort::IsTerminal(j.state)) {
      auto next = c.WaitJob(j.id, j.version, std::chrono::seconds(10));
      if (!next.ok()) std::exit(1);
      j = *next;
    }
  }
  return latencies;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"End-to-end latency and throughput of a local Cohort cluster"};
  int jobs = 100, gangs = 100, burst = 500, agents = 4, gpus = 8, submitters = 4;
  app.add_option("--jobs", jobs, "Single-task jobs for the latency figure")->capture_default_str();
  app.add_option("--gangs", gangs, "4-task gangs for the latency figure")->capture_default_str();
  app.add_option("--burst", burst, "Trivial jobs submitted at once")->capture_default_str();
  app.add_option("--agents", agents, "Agents of the local cluster")->capture_default_str();
  app.add_option("--gpus", gpus, "GPUs per agent")->capture_default_str();
  app.add_option("--submitters", submitters, "Concurrent submitting clients for the burst")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::string bin = SelfDir();
  std::string dir = fmt::format("/tmp/cohort-bench-{}", ::getpid());
  int port = 18000 + ::getpid() % 1000;
  std::string url = fmt::format("http://127.0.0.1:{}", port);
  if (RunToCompletion({bin + "/cohort", "up", "--agents", std::to_string(agents),
                       "--gpus-per-agent", std::to_string(gpus), "--cpus-per-agent", "64", "--port",
                       std::to_string(port), "--data-dir", dir}) != 0) {
    fmt::print(stderr, "cohort up failed; see {}\n", dir);
    return 1;
  }
  // The jobs are the cluster admin's: the account running the benchmark, whose tasks run as it
  // (docs/security.md; `cohort up` lets root's tasks run as root).
  const std::string token(cohort::Trim(cohort::ReadFileOrEmpty(dir + "/master/admin-token")));
  auto client = cohort::client::CohortClient::Create(url, token);
  int rc = 0;
  {
    auto& c = **client;
    std::vector<double> observed_single, observed_gang;
    fmt::print(stderr, "measuring {} single-task jobs...\n", jobs);
    auto single = MeasureStart(c, jobs, 1, &observed_single);
    fmt::print(stderr, "measuring {} 4-task gangs...\n", gangs);
    auto gang = MeasureStart(c, gangs, 4, &observed_gang);

    fmt::print(stderr, "submitting {} trivial jobs at once...\n", burst);
    std::atomic<int> next{0};
    std::vector<std::vector<cohort::JobId>> ids(static_cast<size_t>(submitters));
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < submitters; ++t) {
      threads.emplace_back([&, t] {
        auto own = cohort::client::CohortClient::Create(url, token);
        while (next.fetch_add(1) < burst) {
          auto job = (*own)->Submit(Spec("burst", 1, 1, "true"), {});
          if (job.ok()) ids[static_cast<size_t>(t)].push_back(job->id);
        }
      });
    }
    for (auto& t : threads) t.join();
    auto submitted = std::chrono::steady_clock::now();
    int failed = 0;
    for (const auto& list : ids) {
      for (cohort::JobId id : list) {
        auto j = c.GetJob(id);
        while (j.ok() && !cohort::IsTerminal(j->state)) {
          j = c.WaitJob(id, j->version, std::chrono::seconds(30));
        }
        if (!j.ok() || j->state != JobState::kSucceeded) ++failed;
      }
    }
    auto done = std::chrono::steady_clock::now();
    double submit_s = std::chrono::duration<double>(submitted - start).count();
    double total_s = std::chrono::duration<double>(done - start).count();

    fmt::print("\nCohort end-to-end benchmark: {} agents x {} GPUs on loopback, {} CPUs\n\n",
               agents, gpus, std::thread::hardware_concurrency());
    fmt::print("{:<44} {:>10} {:>10} {:>10}\n", "submit -> every task running", "median ms",
               "p95 ms", "max ms");
    auto row = [](const std::string& name, const std::vector<double>& v) {
      fmt::print("{:<44} {:>10.1f} {:>10.1f} {:>10.1f}\n", name, Percentile(v, 0.5),
                 Percentile(v, 0.95), *std::max_element(v.begin(), v.end()));
    };
    row(fmt::format("1 task, master clock ({} jobs)", jobs), single);
    row(fmt::format("1 task, seen by the client ({} jobs)", jobs), observed_single);
    row(fmt::format("4-task gang, master clock ({} jobs)", gangs), gang);
    row(fmt::format("4-task gang, seen by the client ({} jobs)", gangs), observed_gang);
    fmt::print("\n{:<44} {:>10}\n", "burst of trivial 1-GPU jobs", "value");
    fmt::print("{:<44} {:>10}\n", "jobs", burst);
    fmt::print("{:<44} {:>10}\n", "failed", failed);
    fmt::print("{:<44} {:>10.1f}\n", "submissions per second", burst / submit_s);
    fmt::print("{:<44} {:>10.1f}\n", "jobs per second, submit to all succeeded", burst / total_s);
    rc = failed == 0 ? 0 : 1;
  }
  RunToCompletion({bin + "/cohort", "down", "--data-dir", dir});
  fs::remove_all(dir);
  return rc;
}
