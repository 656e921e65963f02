// The `cohort` CLI against real daemons: up/down, run --wait, wait, logs -f, jobs, nodes, --help.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "model/json.h"
#include "model/limits.h"
#include "os/process.h"
#include "state/state_store.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// No token is passed: `cohort up` saves the local cluster's admin token where `cohort login`
// would (in this test's own config directory), and every later command finds it there.
CommandResult Cohort(const std::string& master, std::vector<std::string> args) {
  args.insert(args.begin(), BinDir() + "/cohort");
  std::map<std::string, std::string> env{
      {"XDG_CONFIG_HOME", "/tmp/cohort-it-config-" + std::to_string(::getpid())}};
  if (!master.empty()) env["COHORT_MASTER"] = master;
  // An empty directory: `cohort run` sends the one it runs in as the job's code.
  const std::string cwd = "/tmp/cohort-it-cwd-" + std::to_string(::getpid());
  fs::create_directories(cwd);
  return RunCommand(args, env, cwd);
}

// A one-task job of the test's account, to write into a state store before the master starts.
Job StoredOneTaskJob(const std::string& name) {
  Job job;
  job.user = TestAccount();
  job.spec.name = name;
  job.spec.team = "default";
  TaskGroupSpec group;
  group.role = "worker";
  group.command = {"true"};
  group.resources = Resources{0, 1000, 1LL << 30};
  job.spec.tasks.push_back(group);
  return job;
}

TEST(Cli, UpRunsAClusterAndDownStopsExactlyIt) {
  std::string dir = "/tmp/cohort-it-up-" + std::to_string(::getpid());
  fs::remove_all(dir);
  // A free port: bind, read, release.
  auto up = Cohort(
      "", {"up", "--agents", "2", "--gpus-per-agent", "2", "--port", "0", "--data-dir", dir});
  // Port 0 is refused: the master's URL must be known in advance.
  EXPECT_NE(up.exit_code, 0);
  int port = 17000 + static_cast<int>(::getpid() % 2000);
  // A task port range that cannot be split among the agents is refused, naming the flag,
  // before anything starts.
  for (auto [range, why] : {std::pair{"40000-39999", "1024 <= FROM <= TO <= 65535"},
                            {"40000", "is not a port range FROM-TO"},
                            {"40000-40000", "holds 1 port, fewer than the 2 agents"}}) {
    auto bad = Cohort("", {"up", "--agents", "2", "--port", std::to_string(port), "--task-ports",
                           range, "--data-dir", dir});
    EXPECT_EQ(bad.exit_code, 1) << range;
    EXPECT_THAT(bad.err, HasSubstr("cohort up: --task-ports: ")) << range;
    EXPECT_THAT(bad.err, HasSubstr(range)) << range;
    EXPECT_THAT(bad.err, HasSubstr(why)) << range;
    EXPECT_FALSE(fs::exists(dir + "/master.pid")) << range;
  }
  up = Cohort("", {"up", "--agents", "2", "--gpus-per-agent", "2", "--port", std::to_string(port),
                   "--task-ports", "41000-41199", "--data-dir", dir});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  std::string url = "http://127.0.0.1:" + std::to_string(port);
  EXPECT_EQ(up.out, url + "\n");
  // And a link that signs the admin in to the dashboard, on stderr.
  EXPECT_THAT(up.err, HasSubstr("dashboard: open " + url + "/#signin=cohc_"));
  std::vector<pid_t> daemons;
  for (const char* name : {"master", "agent-0", "agent-1"}) {
    pid_t pid = std::atoi(ReadFileOrEmpty(dir + "/" + name + ".pid").c_str());
    EXPECT_TRUE(ProcessAlive(pid)) << name;
    daemons.push_back(pid);
  }
  auto again = Cohort("", {"up", "--port", std::to_string(port), "--data-dir", dir});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("already running"));

  auto nodes = Cohort(url, {"nodes", "-o", "json"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  auto doc = ParseJson(nodes.out);
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ((*doc)["nodes"].size(), 2u);
  // --task-ports split between the two agents.
  std::set<std::string> ranges;
  for (const auto& n : (*doc)["nodes"]) {
    ranges.insert(
        fmt::format("{}-{}", n["ports"]["first"].get<int>(), n["ports"]["last"].get<int>()));
  }
  EXPECT_EQ(ranges, (std::set<std::string>{"41000-41099", "41100-41199"}));

  // A long task, so that down has something to stop; and a bystander process it must leave.
  auto run = Cohort(url, {"run", "--gpus", "1", "--", "sleep", "300"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  pid_t bystander = ::fork();
  if (bystander == 0) {
    ::execl("/bin/sleep", "sleep", "30", nullptr);
    _exit(1);
  }
  ASSERT_TRUE(WaitFor([&] {
    auto jobs = Cohort(url, {"jobs", "--state", "running", "-o", "json"});
    auto d = ParseJson(jobs.out);
    return d.ok() && (*d)["jobs"].size() == 1;
  }));

  auto down = Cohort("", {"down", "--data-dir", dir});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_THAT(down.err, HasSubstr("stopped agent-0, agent-1, master and 1 tasks"));
  for (pid_t pid : daemons) EXPECT_FALSE(ProcessAlive(pid));
  EXPECT_TRUE(ProcessAlive(bystander));
  ::kill(bystander, SIGKILL);
  ::waitpid(bystander, nullptr, 0);
  auto gone = Cohort(url, {"jobs"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_THAT(gone.err, HasSubstr("cannot reach the Cohort master"));
  fs::remove_all(dir);
}

TEST(Cli, RunWaitFollowsOutputAndReturnsTheJobsOutcome) {
  LocalCluster cluster("clirun");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  auto ok = cluster.Cohort({"run", "--wait", "--replicas", "2", "--gpus", "1", "--", "sh", "-c",
                            "echo hello from $COHORT_TASK_INDEX"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("[worker/0] hello from 0"));
  EXPECT_THAT(ok.out, HasSubstr("[worker/1] hello from 1"));
  EXPECT_THAT(ok.err, HasSubstr("SUCCEEDED"));

  auto bad = cluster.Cohort(
      {"run", "--wait", "--max-attempts", "1", "--", "sh", "-c", "echo oops; exit 7"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.out, "oops\n");
  EXPECT_THAT(bad.err, HasSubstr("worker/0 exited with code 7"));

  // A program that does not exist is not retried, whatever the budget (docs/reliability.md,
  // "Tasks that cannot start").
  auto missing = cluster.Cohort({"run", "--wait", "--max-attempts", "3", "--", "/no/such/program"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.out, HasSubstr("program \"/no/such/program\" does not exist"));
  EXPECT_THAT(missing.err, HasSubstr("could not start"));
}

TEST(Cli, WaitTimesOutAndLogsFollowUntilTheEnd) {
  LocalCluster cluster("cliwait");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1);
  auto run = cluster.Cohort({"run", "--name", "slow", "--", "sh", "-c",
                             "for i in 1 2 3; do echo line $i; sleep 0.3; done"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string id = run.out.substr(0, run.out.find('\n'));
  auto timeout = cluster.Cohort({"wait", id, "--timeout", "0.1"});
  EXPECT_EQ(timeout.exit_code, 124);
  auto follow = cluster.Cohort({"logs", "-f", id});
  EXPECT_EQ(follow.exit_code, 0) << follow.err;
  EXPECT_EQ(follow.out, "line 1\nline 2\nline 3\n");
  auto wait = cluster.Cohort({"wait", id, "--timeout", "10"});
  EXPECT_EQ(wait.exit_code, 0);
  auto jobs = cluster.Cohort({"jobs"});
  EXPECT_THAT(jobs.out, HasSubstr("slow"));
  EXPECT_THAT(jobs.out, HasSubstr("SUCCEEDED"));
  auto status = cluster.Cohort({"status", id});
  EXPECT_THAT(status.out, HasSubstr("Tasks (attempt 1)"));
  EXPECT_THAT(status.out, HasSubstr("finished"));
  auto bad_task = cluster.Cohort({"logs", id, "--task", "main/5"});
  EXPECT_EQ(bad_task.exit_code, 1);
  EXPECT_THAT(bad_task.err, HasSubstr("has no task main/5; its tasks are worker/0"));
}

// Followed from submission: both tasks' lines with their prefixes, the last line of each attempt
// even without its newline, and attempt 2 after its separator (the stream is woken by shipped
// bytes and by the job's changes; nothing polls).
TEST(Cli, LogsFollowEveryAttemptWithWholeLines) {
  LocalCluster cluster("clilogs");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  JobId id = cluster.Submit(R"(
name: twice
restart: {max_attempts: 2}
tasks:
  - role: worker
    replicas: 2
    resources: {gpus: 1}
    command: [sh, -c, 'echo "attempt $COHORT_ATTEMPT"; sleep 0.3; printf "tail $COHORT_ATTEMPT";
                       [ $COHORT_ATTEMPT = 2 ] || [ $COHORT_TASK_INDEX = 0 ] || exit 3']
)");
  auto follow = cluster.Cohort({"logs", "-f", std::to_string(id)});
  EXPECT_EQ(follow.exit_code, 0) << follow.err;
  const std::string& out = follow.out;
  size_t separator = out.find("--- attempt 2 ---\n");
  ASSERT_NE(separator, std::string::npos) << out;
  for (const char* line : {"[worker/0] attempt 1\n", "[worker/1] attempt 1\n",
                           "[worker/0] tail 1\n", "[worker/1] tail 1\n"}) {
    EXPECT_LT(out.find(line), separator) << line << " in\n" << out;
  }
  for (const char* line : {"[worker/0] attempt 2\n", "[worker/1] attempt 2\n",
                           "[worker/0] tail 2\n", "[worker/1] tail 2\n"}) {
    size_t at = out.find(line);
    EXPECT_TRUE(at != std::string::npos && at > separator) << line << " in\n" << out;
  }
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 9) << out;
  EXPECT_EQ(cluster.WaitForState(id, JobState::kSucceeded).attempt, 2);
}

// The simulator's trace commands chained as bench/sim_findings.sh chains them: two traces as
// two teams, quotas by their GPU-hours, and a bad number named by its option.
TEST(Cli, SimTracesWithTeamsFromTheirFiles) {
  std::string dir = "/tmp/cohort-it-sim-" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
  };
  // big: 3 jobs x 1,000 s x 4 GPUs = 12,000 GPU-seconds; small: 1 job x 4,000 s x 1 GPU.
  write("big.csv", "job_id,submission_time,duration,num_gpu\n1,0,1000,4\n2,10,1000,4\n3,20,1000,4");
  write("small.csv", "job_id,submission_time,duration,num_gpu\n1,5,4000,1");
  auto concat = Cohort("", {"sim", "concat", "--trace", dir + "/big.csv", "--trace",
                            dir + "/small.csv", "--out", dir + "/all.csv"});
  ASSERT_EQ(concat.exit_code, 0) << concat.err;
  auto run = Cohort("", {"sim", "run", "--trace", dir + "/all.csv", "--nodes", "1", "--teams",
                         "auto", "--policy", "fifo", "-o", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // 12,000 : 4,000 of 8 GPUs.
  EXPECT_THAT(run.err, ::testing::ContainsRegex("big +3 jobs +3.3 GPU-h +75.00% -> +6 GPUs"));
  EXPECT_THAT(run.err, ::testing::ContainsRegex("small +1 jobs +1.1 GPU-h +25.00% -> +2 GPUs"));
  Json figures = Json::parse(run.out);
  ASSERT_EQ(figures[0]["teams"].size(), 2u);
  EXPECT_EQ(figures[0]["teams"][0]["team"], "big");
  EXPECT_EQ(figures[0]["teams"][0]["guaranteed_gpus"], 6);
  EXPECT_EQ(figures[0]["unfinished"], 0);
  auto bad = Cohort("", {"sim", "gen", "--jobs", "2", "--rate", "0"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("--rate: must be a number above 0, got 0"));
  // Node failures: reported apart from preemptions' losses, on stderr and in the JSON.
  auto failing = Cohort("", {"sim", "run", "--trace", dir + "/all.csv", "--nodes", "2", "--policy",
                             "fifo", "--node-failures", "10m", "-o", "json"});
  ASSERT_EQ(failing.exit_code, 0) << failing.err;
  EXPECT_THAT(failing.err, HasSubstr("fifo: node failures: "));
  Json failed = Json::parse(failing.out);
  EXPECT_GT(failed[0]["node_failures"].get<int>(), 0);
  EXPECT_GT(failed[0]["jobs_hit_by_failures"].get<int>(), 0);
  EXPECT_GT(failed[0]["failure_lost_gpu_hours"].get<double>(), 0);
  EXPECT_EQ(figures[0]["node_failures"], 0);
  for (auto [args, why] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--node-failures", "0s"}, "--node-failures: must be more than 0s"},
           {{"--node-failures=-5h"}, "--node-failures: \"-5h\" is not a duration"},
           {{"--node-failures", "often"}, "--node-failures: \"often\" is not a duration"},
           {{"--node-failures", "100h", "--node-repair", "soon"},
            "--node-repair: \"soon\" is not a duration; use e.g. 90m, 2h or 1h30m, or never"},
           {{"--node-repair", "1h"}, "--node-repair: only with --node-failures"},
           {{"--node-failures", "100h", "--max-attempts", "0"}, "--max-attempts"}}) {
    std::vector<std::string> cmd = {"sim", "run", "--trace", dir + "/all.csv"};
    cmd.insert(cmd.end(), args.begin(), args.end());
    auto r = Cohort("", cmd);
    EXPECT_NE(r.exit_code, 0) << why;
    EXPECT_THAT(r.err, HasSubstr(why));
  }
  fs::remove_all(dir);
}

// The master answers the jobs list a page at a time (at most kMaxJobPage jobs, kDefaultJobPage
// without `limit`); `cohort jobs` follows the pages and lists every job, as it did when the
// master answered them all at once.
TEST(Cli, JobsListsEveryJobAPageAtATime) {
  LocalCluster cluster("clipages");
  // No agent: every job stays pending, more of them than one user may queue by default.
  cluster.StartMaster({"--max-queued-per-user", "0"});
  const int total = static_cast<int>(kMaxJobPage) + 150;
  auto http = cluster.Http();
  ASSERT_TRUE(http.ok()) << http.status().ToString();
  for (int i = 1; i <= total; ++i) {
    auto r = (*http)->Request(
        "POST", "/api/v1/jobs",
        fmt::format(
            R"({{"name": "page-job-{}", "tasks": [{{"role": "main", "command": ["true"]}}]}})", i),
        "application/json");
    ASSERT_TRUE(r.ok() && r->status == 201) << i << ": " << (r.ok() ? r->body : "");
  }
  // The answer without `limit`: one page and the cursor of the rest.
  auto raw = (*http)->Request("GET", "/api/v1/jobs");
  ASSERT_TRUE(raw.ok() && raw->status == 200);
  auto first = ParseJson(raw->body);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ((*first)["jobs"].size(), kDefaultJobPage);
  EXPECT_TRUE((*first)["next"].is_number_integer()) << (*first)["next"];

  auto table = cluster.Cohort({"jobs"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  std::istringstream lines(table.out);
  std::string line;
  std::vector<JobId> ids;
  std::getline(lines, line);
  EXPECT_THAT(line, ::testing::StartsWith("ID "));
  while (std::getline(lines, line)) ids.push_back(std::stoll(line));
  ASSERT_EQ(ids.size(), static_cast<size_t>(total));
  for (int i = 0; i < total; ++i) ASSERT_EQ(ids[i], i + 1) << "in submission order";

  auto json = cluster.Cohort({"jobs", "--state", "pending", "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto doc = ParseJson(json.out);
  ASSERT_TRUE(doc.ok()) << "one JSON document: " << json.out.substr(0, 200);
  ASSERT_EQ((*doc)["jobs"].size(), static_cast<size_t>(total));
  for (int i = 0; i < total; ++i) ASSERT_EQ((*doc)["jobs"][i]["id"], i + 1);
  EXPECT_EQ((*doc)["jobs"][0]["spec"]["name"], "page-job-1");
  // Written a job at a time, the document is what one dump of the whole list writes.
  EXPECT_TRUE(json.out == doc->dump(2) + "\n") << "not as Json::dump(2) writes it";

  // --limit N: the most recent N, across pages when N is more than one holds.
  const int some = static_cast<int>(kMaxJobPage) + 20;
  auto recent = cluster.Cohort({"jobs", "--limit", std::to_string(some), "-o", "json"});
  ASSERT_EQ(recent.exit_code, 0) << recent.err;
  doc = ParseJson(recent.out);
  ASSERT_TRUE(doc.ok());
  ASSERT_EQ((*doc)["jobs"].size(), static_cast<size_t>(some));
  EXPECT_EQ((*doc)["jobs"][0]["id"], total - some + 1);
  EXPECT_EQ((*doc)["jobs"][some - 1]["id"], total);
  auto three = cluster.Cohort({"jobs", "--limit", "3"});
  ASSERT_EQ(three.exit_code, 0) << three.err;
  EXPECT_EQ(std::count(three.out.begin(), three.out.end(), '\n'), 4) << three.out;

  auto none = cluster.Cohort({"jobs", "--state", "running", "-o", "json"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "{\n  \"jobs\": []\n}\n");
}

// `cohort jobs` shows the time of the last attempt and the total over every attempt, in the
// table and as run_time_s and total_run_time_s (issue 27, item 7).
TEST(Cli, JobsShowTheTotalRunTimeOverEveryAttempt) {
  LocalCluster cluster("cliruntime");
  {
    fs::create_directories(cluster.dir() + "/master");
    auto store = state::OpenSqliteStateStore(cluster.dir() + "/master/cohort.db");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    Job job = StoredOneTaskJob("retried");
    Timestamp t0 = FromMicros(1'790'000'000'000'000);
    job.submitted_at = t0;
    job.state = JobState::kFailed;
    job.attempt = 2;
    job.failures = 2;
    job.history = {AttemptSummary{1,
                                  t0 + std::chrono::seconds(10),
                                  t0 + std::chrono::seconds(3610),
                                  "failed: worker/0 exited with code 1",
                                  {}},
                   AttemptSummary{2,
                                  t0 + std::chrono::seconds(4000),
                                  t0 + std::chrono::seconds(4600),
                                  "failed: worker/0 exited with "
                                  "code 1",
                                  {}}};
    job.placed_at = t0 + std::chrono::seconds(4000);
    job.finished_at = t0 + std::chrono::seconds(4600);
    ASSERT_TRUE((*store)->CreateJob(job, {JobEvent{0, t0, "submitted", "by the test"}}).ok());
  }
  cluster.StartMaster();
  auto json = cluster.Cohort({"jobs", "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto doc = ParseJson(json.out);
  ASSERT_TRUE(doc.ok()) << json.out;
  EXPECT_EQ((*doc)["jobs"][0]["run_time_s"], 600.0);
  EXPECT_EQ((*doc)["jobs"][0]["total_run_time_s"], 4200.0);
  auto table = cluster.Cohort({"jobs"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("TOTAL RUN"));
  EXPECT_THAT(table.out, HasSubstr("10m"));  // the last attempt
  EXPECT_THAT(table.out, HasSubstr("70m"));  // both
}

// A job's events come a page at a time too (at most kMaxEventPage): `cohort status` reads every
// page. The job's long life (2,600 events, as 100 attempts of 25 tasks would leave) is written
// to the master's store before it starts.
TEST(Cli, StatusShowsEveryEventOfALongLife) {
  LocalCluster cluster("clievents");
  const int more = 2600;
  {
    fs::create_directories(cluster.dir() + "/master");
    auto store = state::OpenSqliteStateStore(cluster.dir() + "/master/cohort.db");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    Job job = StoredOneTaskJob("long-life");
    job.submitted_at = FromMicros(1'790'000'000'000'000);
    std::vector<JobEvent> events = {JobEvent{0, job.submitted_at, "submitted", "by the test"}};
    for (int i = 1; i <= more; ++i) {
      events.push_back(JobEvent{0, job.submitted_at + std::chrono::seconds(i), "task_ended",
                                fmt::format("FAILED: worker/{} exited with code 1", i)});
    }
    auto created = (*store)->CreateJob(job, events);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }
  cluster.StartMaster();
  auto json = cluster.Cohort({"status", "1", "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto doc = ParseJson(json.out);
  ASSERT_TRUE(doc.ok());
  ASSERT_EQ((*doc)["events"].size(), static_cast<size_t>(more + 1));
  EXPECT_EQ((*doc)["events"][0]["type"], "submitted");
  EXPECT_EQ((*doc)["events"][more]["message"],
            fmt::format("FAILED: worker/{} exited with code 1", more));
  auto table = cluster.Cohort({"status", "1"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr(fmt::format("worker/{} exited", more)));
  EXPECT_THAT(table.out, HasSubstr("worker/1 exited"));
}

TEST(Cli, EveryCommandHasHelp) {
  for (const char* cmd : {"up",     "down",  "submit", "run",     "jobs",  "status", "logs",
                          "kill",   "wait",  "nodes",  "metrics", "top",   "usage",  "audit",
                          "secret", "token", "user",   "team",    "login", "whoami", "artifacts"}) {
    auto r = Cohort("", {cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_THAT(r.out, HasSubstr("Usage")) << cmd;
  }
  for (const char* cmd : {"ls", "get"}) {
    auto r = Cohort("", {"artifacts", cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << "artifacts " << cmd;
    EXPECT_THAT(r.out, HasSubstr("Usage")) << "artifacts " << cmd;
  }
  for (const char* cmd : {"run", "gen", "concat", "split"}) {
    auto r = Cohort("", {"sim", cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << "sim " << cmd;
    EXPECT_THAT(r.out, HasSubstr("Usage")) << "sim " << cmd;
  }
  auto sim_run = Cohort("", {"sim", "run", "--help"});
  for (const char* flag : {"--node-failures", "--node-repair", "--max-attempts"}) {
    EXPECT_THAT(sim_run.out, HasSubstr(flag));
  }
  for (const char* cmd : {"master", "agent", "run-task"}) {
    auto r = RunCommand({BinDir() + "/cohortd", cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_THAT(r.out, HasSubstr("Usage")) << cmd;
  }
}

TEST(Cli, TheMasterRefusesOraclesAndBadTuningNamingTheFlag) {
  std::string dir = ::testing::TempDir() + "/cohort-tuning";
  auto master = [&](std::vector<std::string> flags) {
    std::vector<std::string> args = {BinDir() + "/cohortd", "master", "--data-dir", dir};
    args.insert(args.end(), flags.begin(), flags.end());
    return RunCommand(args);
  };
  auto oracle = master({"--policy", "sjf-oracle"});
  EXPECT_NE(oracle.exit_code, 0);
  EXPECT_THAT(oracle.err, HasSubstr("--policy: sjf-oracle is a reference for `cohort sim run`"));
  auto levels = master({"--levels", "16h,1h"});
  EXPECT_NE(levels.exit_code, 0);
  EXPECT_THAT(levels.err, HasSubstr("--levels: thresholds must grow"));
  auto wait = master({"--max-wait", "soon"});
  EXPECT_NE(wait.exit_code, 0);
  EXPECT_THAT(wait.err, HasSubstr("--max-wait"));
  // The same parser in the simulator.
  fs::create_directories(dir);
  std::ofstream(dir + "/t.csv") << "job_id,submission_time,duration,num_gpu\na,0,10,1\n";
  auto sim = Cohort("", {"sim", "run", "--trace", dir + "/t.csv", "--promote-factor", "-2"});
  EXPECT_NE(sim.exit_code, 0);
  EXPECT_THAT(sim.err, HasSubstr("--promote-factor"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cohort::testing
