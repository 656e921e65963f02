// Accounting and the audit log end to end: real jobs through the `cohort` CLI, then `cohort
// usage` (JSON and CSV) against the jobs' own records, and `cohort audit`.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "common/strings.h"
#include "model/json.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// The GPU-hours a job's tasks held, from its record as the master returns it: each task from
// when its resources were taken to its end (the agent's, within what the master saw).
double GpuHoursOf(const Job& job) {
  double hours = 0;
  for (const auto& t : job.tasks) {
    if (!t.held_since || !t.finished_at) continue;
    Duration held = std::max(Duration(0), *t.finished_at - *t.held_since);
    hours += static_cast<double>(t.resources.gpus * held.count()) / 3.6e9;
  }
  return hours;
}

class UsageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.StartMaster();
    cluster_.StartAgent("node-a", 4);
    // ada, an admin (who may read the audit log), has no Unix account here: her tasks run as
    // nobody.
    ASSERT_EQ(
        cluster_.Cohort({"user", "create", "ada", "--admin", "--uid", "65534", "--gid", "65534"})
            .exit_code,
        0);
    auto token = cluster_.Cohort({"token", "create", "--user", "ada"});
    ASSERT_EQ(token.exit_code, 0) << token.err;
    ada_token_ = std::string(Trim(token.out));
  }

  // The CLI as user ada.
  CommandResult Cohort(std::vector<std::string> args) {
    args.insert(args.begin(), BinDir() + "/cohort");
    // In an empty directory: `cohort run` sends the one it runs in as the job's code.
    const std::string cwd = cluster_.dir() + "/cwd";
    std::filesystem::create_directories(cwd);
    return RunCommand(args, {{"COHORT_MASTER", cluster_.url()}, {"COHORT_TOKEN", ada_token_}}, cwd);
  }

  std::string ada_token_;

  JobId Run(std::vector<std::string> args) {
    args.insert(args.begin(), "run");
    auto run = Cohort(args);
    // `run` prints the job id; with --wait, "job N submitted" to stderr.
    std::string first = Split(run.out, '\n').at(0);
    if (run.err.starts_with("job ")) first = Split(run.err.substr(4), ' ').at(0);
    auto id = ParseJobId(Trim(first));
    EXPECT_TRUE(id.ok()) << run.out << run.err;
    return id.ok() ? *id : 0;
  }

  LocalCluster cluster_{"usage"};
};

TEST_F(UsageTest, UsageAddsUpTheJobsRunAndAuditNamesWhoDidWhat) {
  JobId ok = Run({"--gpus", "2", "--wait", "--", "sleep", "1"});
  JobId failed = Run({"--gpus", "1", "--max-attempts", "1", "--wait", "--", "sh", "-c", "exit 3"});
  JobId killed = Run({"--gpus", "1", "--", "sleep", "300"});
  cluster_.WaitForState(killed, JobState::kRunning);
  auto kill = Cohort({"kill", std::to_string(killed)});
  ASSERT_EQ(kill.exit_code, 0) << kill.err;
  cluster_.WaitForState(ok, JobState::kSucceeded);
  cluster_.WaitForState(failed, JobState::kFailed);
  cluster_.WaitForState(killed, JobState::kKilled);
  double expected = 0;
  for (JobId id : {ok, failed, killed}) {
    auto job = cluster_.client().GetJob(id);
    ASSERT_TRUE(job.ok());
    expected += GpuHoursOf(*job);
  }
  EXPECT_GT(expected, 2.0 / 3600);  // 2 GPUs for at least the second `sleep 1` takes

  auto json = Cohort({"usage", "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto doc = ParseJson(json.out);
  ASSERT_TRUE(doc.ok()) << json.out;
  ASSERT_EQ((*doc)["rows"].size(), 1u) << json.out;
  const Json& row = (*doc)["rows"][0];
  EXPECT_EQ(row["team"], "default");
  EXPECT_EQ(row["user"], "ada");
  EXPECT_EQ(row["jobs_submitted"], 3);
  EXPECT_EQ(row["jobs_succeeded"], 1);
  EXPECT_EQ(row["jobs_failed"], 1);
  EXPECT_EQ(row["jobs_killed"], 1);
  EXPECT_EQ(row["attempts"], 3);
  EXPECT_EQ(row["jobs_started"], 3);
  EXPECT_NEAR(row["gpu_hours"].get<double>(), expected, 1e-9);
  EXPECT_EQ((*doc)["total"]["gpu_hours"], row["gpu_hours"]);
  EXPECT_GE(row["queue_delay_max_s"].get<double>(), 0.0);

  auto csv = Cohort({"usage", "--user", "ada", "--by", "day", "-o", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  auto lines = Split(Trim(csv.out), '\n');
  ASSERT_GE(lines.size(), 2u) << csv.out;  // a header and a day (two, if run across midnight)
  EXPECT_EQ(lines[0],
            "period,start,end,team,user,gpu_hours,cpu_hours,jobs_submitted,jobs_succeeded,"
            "jobs_failed,jobs_killed,attempts,jobs_started,queue_delay_mean_s,"
            "queue_delay_max_s");
  double csv_hours = 0;
  int64_t submitted = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    auto cells = Split(lines[i], ',');
    ASSERT_EQ(cells.size(), 15u) << lines[i];
    EXPECT_EQ(cells[3], "default");
    EXPECT_EQ(cells[4], "ada");
    EXPECT_THAT(cells[1], StartsWith(cells[0]));  // the day's part starts on that day
    csv_hours += std::stod(cells[5]);
    submitted += std::stoll(cells[7]);
  }
  EXPECT_NEAR(csv_hours, expected, 1e-9);
  EXPECT_EQ(submitted, 3);

  auto none = Cohort({"usage", "--team", "nobody", "-o", "json"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ((*ParseJson(none.out))["rows"].size(), 0u);
  auto bad = Cohort({"usage", "--since", "last tuesday"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("since: \"last tuesday\" is not a time"));
  auto table = Cohort({"usage"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("GPU-HOURS"));
  EXPECT_THAT(table.out, HasSubstr("TOTAL"));

  auto audit = Cohort({"audit", "-o", "json"});
  ASSERT_EQ(audit.exit_code, 0) << audit.err;
  auto log = ParseJson(audit.out);
  ASSERT_TRUE(log.ok()) << audit.out;
  std::vector<std::string> calls;
  for (const auto& e : (*log)["entries"]) {
    EXPECT_THAT(e["remote"].get<std::string>(), StartsWith("127.0.0.1:"));
    if (e["user"] == "root") continue;  // the admin who made ada and her token
    calls.push_back(fmt::format("{} {} {} {} {}", e["user"].get<std::string>(),
                                e["method"].get<std::string>(), e["path"].get<std::string>(),
                                e["target"].is_null() ? "-" : e["target"].get<std::string>(),
                                e["status"].dump()));
  }
  EXPECT_EQ(calls, (std::vector<std::string>{
                       "(join token) POST /api/v1/agents/register node node-a 200",
                       fmt::format("ada POST /api/v1/jobs job {} 201", ok),
                       fmt::format("ada POST /api/v1/jobs job {} 201", failed),
                       fmt::format("ada POST /api/v1/jobs job {} 201", killed),
                       fmt::format("ada POST /api/v1/jobs/{}/kill job {} 200", killed, killed),
                   }));
  auto mine = Cohort({"audit", "--user", "ada", "--limit", "1"});
  ASSERT_EQ(mine.exit_code, 0) << mine.err;
  EXPECT_THAT(mine.out, HasSubstr(fmt::format("/api/v1/jobs/{}/kill", killed)));
  EXPECT_THAT(mine.err, HasSubstr("older entries not shown"));
}

TEST(UsageFlags, AnAuditRetentionBelowAnHourIsRefused) {
  auto r = RunCommand({BinDir() + "/cohortd", "master", "--audit-retention", "10m", "--data-dir",
                       "/tmp/cohort-usage-flags-" + std::to_string(::getpid())});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--audit-retention: must be at least 1h"));
}

}  // namespace
}  // namespace cohort::testing
