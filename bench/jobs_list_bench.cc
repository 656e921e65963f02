// How fast the jobs list answers with a long history (docs/performance.md, "The jobs list"): a
// SQLite state store filled with `--jobs` jobs (ended and pending, of 200 users in 8 teams, with
// several names), served by a real `cohortd master`, then GET /api/v1/jobs as the dashboard asks
// for it (pages of 50 through the `before=` cursor, with each filter), timed from the client over
// loopback, median and worst of `--requests`. A filter that matches few jobs is the worst case:
// the master looks at every job to fill the page. Then the whole list as `cohort jobs` reads it,
// page after page.
//
//   build/bin/jobs_list_bench [--jobs 100000] [--requests 15] [--dir /dev/shm] [--keep]
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "client/http_client.h"
#include "common/strings.h"
#include "model/json.h"
#include "model/limits.h"
#include "os/process.h"
#include "state/state_store.h"

namespace {

using namespace cohort;
namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;

constexpr int kTeams = 8;
constexpr int kUsers = 200;
const char* const kNames[] = {"train-resnet", "eval-bert", "sweep-lr", "finetune-llama",
                              "data-prep"};

double Millis(Steady::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// VmRSS of a process, in MiB.
double RssMiB(pid_t pid) {
  for (auto line : Split(ReadFileOrEmpty(fmt::format("/proc/{}/status", pid)), '\n')) {
    if (line.starts_with("VmRSS:")) return std::stod(std::string(Trim(line.substr(6)))) / 1024;
  }
  return 0;
}

// Job i: user i % 200 in team (i % 200) % 8, named after one of five kinds of work; one in 50
// still pending, the others succeeded, failed or killed. Every 10,000th is "rare-probe-N", so
// that a name filter matches 10 jobs of 100,000.
Job JobNumber(int i, Timestamp start) {
  Job job;
  int user = i % kUsers;
  job.user = fmt::format("user-{}", user);
  job.spec.team = fmt::format("team-{}", user % kTeams);
  job.spec.name =
      i % 10'000 == 0 ? fmt::format("rare-probe-{}", i) : fmt::format("{}-{}", kNames[i % 5], i);
  TaskGroupSpec g;
  g.role = "worker";
  g.replicas = 1 + i % 4;
  g.resources = Resources{1 + i % 8, 4000, 16LL << 30};
  g.command = {"python3", "train.py", "--epochs", "90"};
  job.spec.tasks.push_back(g);
  job.submitted_at = start + std::chrono::seconds(i);
  if (i % 50 == 0) {
    job.message = "waiting for GPUs: 8 free, 16 asked";
    return job;
  }
  static constexpr JobState kEnded[] = {JobState::kSucceeded, JobState::kSucceeded,
                                        JobState::kSucceeded, JobState::kFailed, JobState::kKilled};
  job.state = kEnded[i % 5];
  job.attempt = 1;
  job.placed_at = job.submitted_at + std::chrono::seconds(5);
  job.running_at = job.submitted_at + std::chrono::seconds(6);
  job.finished_at = job.submitted_at + std::chrono::hours(1);
  job.message = job.state == JobState::kFailed ? "worker/0 exited with code 1" : "";
  return job;
}

void Fill(state::StateStore& store, int jobs) {
  for (int t = 0; t < kTeams; ++t) {
    Status s = store.SaveTeam(TeamQuota{fmt::format("team-{}", t), 8, std::nullopt});
    if (!s.ok()) throw std::runtime_error(s.ToString());
  }
  Timestamp start = FromMicros(1'790'000'000'000'000);
  for (int i = 1; i <= jobs; ++i) {
    auto created = store.CreateJob(JobNumber(i, start), {});
    if (!created.ok()) throw std::runtime_error(created.status().ToString());
  }
}

struct Case {
  std::string name;
  std::string query;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times GET /api/v1/jobs pages and filters over a master holding many jobs"};
  int jobs = 100'000;
  int requests = 15;
  std::string dir = fs::exists("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
  bool keep = false;
  app.add_option("--jobs", jobs, "Jobs in the master's store")->capture_default_str();
  app.add_option("--requests", requests, "Requests per case; the median and the worst are shown")
      ->capture_default_str();
  app.add_option("--dir", dir, "Where the data directory goes (filling it is a write per job)")
      ->capture_default_str();
  app.add_flag("--keep", keep, "Keep the data directory (cohortd master --data-dir serves it)");
  CLI11_PARSE(app, argc, argv);
  if (jobs < 1000 || requests < 1) {
    fmt::print(stderr, "--jobs must be at least 1000 and --requests at least 1\n");
    return 2;
  }

  fs::path data = fs::path(dir) / fmt::format("cohort-jobs-list-bench-{}", ::getpid());
  fs::create_directories(data);
  auto fill_start = Steady::now();
  {
    auto store = state::OpenSqliteStateStore((data / "cohort.db").string());
    if (!store.ok()) {
      fmt::print(stderr, "{}\n", store.status().ToString());
      return 1;
    }
    Fill(**store, jobs);
  }
  fmt::print("filled {} jobs in {:.1f} s ({})\n", jobs, Millis(Steady::now() - fill_start) / 1000,
             data.string());

  const std::string bin = fs::read_symlink("/proc/self/exe").parent_path().string();
  const std::string url_file = (data / "url").string();
  auto load_start = Steady::now();
  SpawnOptions options;
  options.output = (data / "master.log").string();
  auto master =
      Spawn({bin + "/cohortd", "master", "--listen", "127.0.0.1:0", "--data-dir", data.string(),
             "--url-file", url_file, "--web-dir", "none", "--log-level", "warn"},
            options);
  if (!master.ok()) {
    fmt::print(stderr, "{}\n", master.status().ToString());
    return 1;
  }
  std::string url;
  while (url.empty() && Steady::now() - load_start < std::chrono::minutes(2)) {
    url = std::string(Trim(ReadFileOrEmpty(url_file)));
    if (url.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double load_ms = Millis(Steady::now() - load_start);
  const std::string token(Trim(ReadFileOrEmpty((data / "admin-token").string())));
  auto http = client::HttpClient::Create(url);
  if (url.empty() || token.empty() || !http.ok()) {
    fmt::print(stderr, "the master did not start; see {}/master.log\n", data.string());
    ::kill(*master, SIGKILL);
    return 1;
  }
  (*http)->SetHeader("Authorization", "Bearer " + token);
  fmt::print("master up after {:.0f} ms (loading {} jobs), resident memory {:.0f} MiB\n\n", load_ms,
             jobs, RssMiB(*master));

  const int deep = jobs - 99'000 + 1;  // the cursor after 99,000 jobs, newest first
  const std::vector<Case> cases = {
      {"first page", "before=&limit=50"},
      {"page after 99,000 jobs (cursor)", fmt::format("before={}&limit=50", deep)},
      {"state=PENDING (1 in 50)", "before=&limit=50&state=PENDING"},
      {"state=PENDING, after 99,000 jobs", fmt::format("before={}&limit=50&state=PENDING", deep)},
      {"team=team-3 (1 in 8)", "before=&limit=50&team=team-3"},
      {"user=user-7 (1 in 200)", "before=&limit=50&user=user-7"},
      {"name=resnet (1 in 5)", "before=&limit=50&name=resnet"},
      {"name=rare-probe (10 jobs)", "before=&limit=50&name=rare-probe"},
      {"user=nobody (no job)", "before=&limit=50&user=nobody"},
      {"team + user + state, no match", "before=&limit=50&team=team-1&user=user-7&state=FAILED"},
      {"first form, limit=50", "limit=50"},
      {"no limit (the default page of 500)", ""},
      {"limit=1000 (the largest page)", "limit=1000"},
      {"after=&limit=1000 (oldest first)", "after=&limit=1000"},
  };
  fmt::print("| request (GET /api/v1/jobs?...) | jobs | median ms | max ms |\n|---|---|---|---|\n");
  int failures = 0;
  for (const Case& c : cases) {
    std::vector<double> times;
    size_t answered = 0;
    for (int r = 0; r < requests; ++r) {
      auto t = Steady::now();
      auto result = (*http)->Request("GET", "/api/v1/jobs?" + c.query);
      times.push_back(Millis(Steady::now() - t));
      auto body = result.ok() && result->status == 200 ? ParseJson(result->body)
                                                       : StatusOr<Json>(Status::Internal("failed"));
      if (!body.ok()) {
        fmt::print(stderr, "{}: {}\n", c.query,
                   result.ok() ? result->body : result.status().ToString());
        ++failures;
        break;
      }
      answered = (*body)["jobs"].size();
    }
    std::sort(times.begin(), times.end());
    fmt::print("| {} | {} | {:.2f} | {:.2f} |\n", c.name, answered, times[times.size() / 2],
               times.back());
  }
  // What `cohort jobs` without --limit does: every job, a page of kMaxJobPage at a time through
  // the `after` cursor. Each request holds the event loop for one page only.
  for (int run = 0; run < 3; ++run) {
    auto walk = Steady::now();
    std::string after;
    size_t listed = 0, pages = 0, bytes = 0;
    double slowest = 0;
    for (;;) {
      auto t = Steady::now();
      auto result = (*http)->Request(
          "GET", fmt::format("/api/v1/jobs?limit={}&after={}", kMaxJobPage, after));
      slowest = std::max(slowest, Millis(Steady::now() - t));
      auto body = result.ok() && result->status == 200 ? ParseJson(result->body)
                                                       : StatusOr<Json>(Status::Internal("failed"));
      if (!body.ok()) {
        fmt::print(stderr, "after={}: {}\n", after,
                   result.ok() ? result->body : result.status().ToString());
        ++failures;
        break;
      }
      ++pages;
      bytes += result->body.size();
      listed += (*body)["jobs"].size();
      if ((*body)["next"].is_null()) break;
      after = (*body)["next"].dump();
    }
    fmt::print(
        "\nevery job, as cohort jobs reads them ({} pages of up to {}): {} jobs, {:.1f} MB in "
        "{:.0f} ms, slowest page {:.0f} ms\n",
        pages, kMaxJobPage, listed, static_cast<double>(bytes) / 1e6, Millis(Steady::now() - walk),
        slowest);
  }
  fmt::print("master's resident memory after the walks: {:.0f} MiB\n", RssMiB(*master));
  ::kill(*master, SIGTERM);
  int status = 0;
  ::waitpid(*master, &status, 0);
  if (keep) {
    fmt::print("kept {}\n", data.string());
  } else {
    fs::remove_all(data);
  }
  return failures == 0 ? 0 : 1;
}
