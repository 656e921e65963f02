// How long `cohort usage` and `cohort audit` hold the master's event loop over a large history:
// a SQLite state store with 100,000 jobs (their task holds and attempts, over 90 days) and
// 100,000 audit entries, queried as the master queries it (UsageAccumulator over the store's
// scans, LoadAudit, one batch of PruneAudit). Prints a table; docs/performance.md records this
// machine's figures.
//
//   build/bin/usage_bench [--jobs 100000] [--runs 5] [--dir /dev/shm] [--keep]
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "master/usage_report.h"
#include "state/state_store.h"

namespace {

using namespace cohort;
namespace fs = std::filesystem;

constexpr int64_t kHourUs = 3'600'000'000;
constexpr int64_t kDayUs = 24 * kHourUs;
const Timestamp kNow = FromMicros(1'790'000'000'000'000);  // 2026-09-21

// Jobs of 200 users, each in one of 8 teams, submitted over 90 days before kNow: 1 to 3 tasks of 1
// to 8 GPUs, running 10 minutes to 10 hours; one in ten needs a second attempt; the last few still
// run.
void Fill(state::StateStore& store, int jobs) {
  std::mt19937_64 random(42);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(random);
  };
  for (int i = 0; i < jobs; ++i) {
    Job job;
    job.spec.name = fmt::format("job-{}", i);
    int64_t user = uniform(0, 199);
    job.spec.team = fmt::format("team-{}", user % 8);
    job.user = fmt::format("user-{}", user);
    TaskGroupSpec g;
    g.role = "worker";
    g.replicas = static_cast<int>(uniform(1, 3));
    g.resources = Resources{uniform(1, 8), 4000, 16LL << 30};
    g.command = {"python3", "train.py"};
    job.spec.tasks.push_back(g);
    job.submitted_at = kNow - Duration(90 * kDayUs) + Duration(90 * kDayUs / jobs * i);
    auto created = store.CreateJob(job, {});
    if (!created.ok()) throw std::runtime_error(created.status().ToString());
    job = *created;
    Timestamp start = job.submitted_at + Duration(uniform(0, kHourUs));
    int attempts = uniform(0, 9) == 0 ? 2 : 1;
    std::vector<state::TaskUsage> holds;
    for (int a = 1; a <= attempts; ++a) {
      Timestamp end = start + Duration(uniform(kHourUs / 6, 10 * kHourUs));
      bool running = end > kNow;
      job.attempt = a;
      job.placed_at = start;
      for (int r = 0; r < g.replicas; ++r) {
        holds.push_back(state::TaskUsage{job.id, a, fmt::format("worker/{}", r), job.spec.team,
                                         job.user, g.resources.gpus, g.resources.milli_cpus, start,
                                         running ? std::nullopt : std::optional<Timestamp>(end)});
      }
      // Each attempt is saved as it is placed, as the master does.
      job.state = JobState::kRunning;
      Status placed = store.SaveJob(job, {}, {});
      if (!placed.ok()) throw std::runtime_error(placed.ToString());
      if (running) break;
      job.state = a == attempts ? JobState::kSucceeded : JobState::kPending;
      if (a == attempts) job.finished_at = end;
      start = end + Duration(uniform(0, kHourUs));
    }
    Status saved = store.SaveJob(job, {}, holds);
    if (!saved.ok()) throw std::runtime_error(saved.ToString());
  }
  for (int i = 0; i < jobs; ++i) {
    state::AuditEntry e;
    e.time = kNow - Duration(90 * kDayUs) + Duration(90 * kDayUs / jobs * i);
    e.user = fmt::format("user-{}", i % 200);
    e.remote = "10.0.0.1:40000";
    e.method = "POST";
    e.path = "/api/v1/jobs";
    auto seq = store.BeginAudit(e);
    if (!seq.ok() || !store.FinishAudit(*seq, 201, fmt::format("job {}", i + 1), "").ok()) {
      throw std::runtime_error("audit");
    }
  }
}

struct Case {
  std::string name;
  master::UsageQuery query;
};

double Millis(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times usage reports and audit queries over a large SQLite history"};
  int jobs = 100'000;
  int runs = 5;
  std::string dir = fs::exists("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
  app.add_option("--jobs", jobs, "Jobs (and audit entries) in the store")->capture_default_str();
  app.add_option("--runs", runs, "Runs of each query; the median and the worst are shown")
      ->capture_default_str();
  app.add_option("--dir", dir, "Where the database goes (filling it is a write per job)")
      ->capture_default_str();
  bool keep = false;
  app.add_flag("--keep", keep,
               "Keep the database (a master's data directory: cohortd master "
               "--data-dir DIR serves it)");
  CLI11_PARSE(app, argc, argv);

  fs::path path = fs::path(dir) / fmt::format("cohort-usage-bench-{}", getpid());
  fs::create_directories(path);
  auto store = state::OpenSqliteStateStore((path / "cohort.db").string());
  if (!store.ok()) {
    fmt::print(stderr, "{}\n", store.status().ToString());
    return 1;
  }
  auto fill_start = std::chrono::steady_clock::now();
  Fill(**store, jobs);
  fmt::print("filled {} jobs and {} audit entries in {:.1f} s ({})\n\n", jobs, jobs,
             Millis(std::chrono::steady_clock::now() - fill_start) / 1000, path.string());

  auto days = [](int n) { return kNow - Duration(n * kDayUs); };
  std::vector<Case> cases = {
      {"total, last day", {days(1), kNow, "", "", master::UsagePeriod::kTotal}},
      {"total, last 7 days", {days(7), kNow, "", "", master::UsagePeriod::kTotal}},
      {"total, last 30 days", {days(30), kNow, "", "", master::UsagePeriod::kTotal}},
      {"total, all 90 days", {days(91), kNow, "", "", master::UsagePeriod::kTotal}},
      {"by week, all 90 days", {days(91), kNow, "", "", master::UsagePeriod::kWeek}},
      {"by day, one team, 90 days", {days(91), kNow, "team-3", "", master::UsagePeriod::kDay}},
      {"by day, one user, 30 days", {days(30), kNow, "", "user-7", master::UsagePeriod::kDay}},
  };
  fmt::print("{:<32} {:>8} {:>10} {:>10} {:>12}\n", "usage report", "rows", "median ms", "max ms",
             "GPU-hours");
  for (const auto& c : cases) {
    std::vector<double> times;
    size_t rows = 0;
    double gpu_hours = 0;
    for (int r = 0; r < runs; ++r) {
      auto start = std::chrono::steady_clock::now();
      auto sums = master::UsageAccumulator::Create(c.query, kNow);
      state::UsageScan scan{c.query.since, c.query.until, c.query.team, c.query.user};
      Status s = (*store)->ScanUsage(scan, [&](const state::TaskUsage& h) { sums->AddHold(h); });
      if (s.ok()) {
        s = (*store)->ScanMilestones(scan,
                                     [&](const state::JobMilestone& m) { sums->AddMilestone(m); });
      }
      auto report = std::move(*sums).Finish();
      times.push_back(Millis(std::chrono::steady_clock::now() - start));
      if (!s.ok() || !report.ok()) {
        fmt::print(stderr, "{}: {}\n", c.name, s.ok() ? report.status().ToString() : s.ToString());
        return 1;
      }
      rows = report->rows.size();
      gpu_hours = report->total.gpu_hours;
    }
    std::sort(times.begin(), times.end());
    fmt::print("{:<32} {:>8} {:>10.1f} {:>10.1f} {:>12.0f}\n", c.name, rows,
               times[times.size() / 2], times.back(), gpu_hours);
  }

  fmt::print("\n{:<32} {:>8} {:>10} {:>10}\n", "audit", "entries", "median ms", "max ms");
  for (int64_t limit : {100, 10'000}) {
    std::vector<double> times;
    size_t n = 0;
    for (int r = 0; r < runs; ++r) {
      auto start = std::chrono::steady_clock::now();
      auto entries = (*store)->LoadAudit(
          state::AuditQuery{FromMicros(0), FromMicros(INT64_MAX), "", limit, ""});
      times.push_back(Millis(std::chrono::steady_clock::now() - start));
      n = entries.ok() ? entries->size() : 0;
    }
    std::sort(times.begin(), times.end());
    fmt::print("{:<32} {:>8} {:>10.1f} {:>10.1f}\n", fmt::format("newest {}", limit), n,
               times[times.size() / 2], times.back());
  }
  {
    std::vector<double> times;
    size_t n = 0;
    for (int r = 0; r < runs; ++r) {
      auto start = std::chrono::steady_clock::now();
      auto entries = (*store)->LoadAudit(
          state::AuditQuery{FromMicros(0), FromMicros(INT64_MAX), "user-7", 100, ""});
      times.push_back(Millis(std::chrono::steady_clock::now() - start));
      n = entries.ok() ? entries->size() : 0;
    }
    std::sort(times.begin(), times.end());
    fmt::print("{:<32} {:>8} {:>10.1f} {:>10.1f}\n", "newest 100 of one user", n,
               times[times.size() / 2], times.back());
  }
  auto start = std::chrono::steady_clock::now();
  auto pruned = (*store)->PruneAudit(days(60), 5'000);
  fmt::print("{:<32} {:>8} {:>10.1f}\n", "prune one batch", pruned.ok() ? *pruned : -1,
             Millis(std::chrono::steady_clock::now() - start));
  store->reset();
  if (keep) {
    fmt::print("kept {}\n", path.string());
  } else {
    fs::remove_all(path);
  }
  return 0;
}
