// Accounting and the audit log's retention against the master's real code: jobs run with a
// manual clock and hand-written agent reports, the master restarts on the same SQLite file, and
// the figures must come out exact.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/units.h"
#include "master/master_test_fixture.h"

namespace cohort::master {
namespace {

using Call = cohort::testing::FailingStateStore::Call;

// A date or an RFC 3339 time.
Timestamp At(const char* text) { return *ParseTimeSpec(text, Timestamp{}); }

class AccountingTest : public MasterTest {
 protected:
  void SetUp() override {
    // Hours pass between reports here: the node must not be lost for its silence.
    node_timeout_ = std::chrono::hours(24);
    clock_.Set(At("2026-11-01T22:50:00Z"));
    MasterTest::SetUp();
  }

  UsageReport Usage(const char* since, const char* until, UsagePeriod by = UsagePeriod::kTotal,
                    const std::string& team = "", const std::string& user = "") {
    auto report = master_->usage().Compute(UsageQuery{At(since), At(until), team, user, by});
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    return report.ok() ? *report : UsageReport{};
  }

  // Restarts the master on the same database; the agent syncs again with what it runs.
  void Restart(const std::string& node, TaskState running = TaskState::kRunning) {
    Start();
    Report(node, running);
    RunPosted();
  }
};

// One job, two attempts, two restarts of the master (each while an attempt runs), a day boundary
// in the first attempt: 2 GPUs for 90 min, then 2 GPUs for 60 min.
TEST_P(AccountingTest, GpuHoursAreExactAcrossRestartsARequeueAndMidnight) {
  JobId id = Submit(1, 2, /*max_attempts=*/2);  // 22:50; no node yet
  clock_.Set(At("2026-11-01T23:00:00Z"));
  AddNode("a", 4);
  RunPosted();  // placed at 23:00: waited 10 min
  ASSERT_EQ(GetJob(id).state, JobState::kStarting);
  Report("a", TaskState::kRunning);
  clock_.Set(At("2026-11-01T23:30:00Z"));
  Restart("a");
  clock_.Set(At("2026-11-02T00:30:00Z"));
  Report("a", TaskState::kFailed, 1);  // attempt 1: 23:00 to 00:30
  RunPosted();
  ASSERT_EQ(GetJob(id).attempt, 2);
  ASSERT_EQ(GetJob(id).state, JobState::kStarting);
  Report("a", TaskState::kRunning);
  clock_.Set(At("2026-11-02T01:00:00Z"));
  Restart("a");
  clock_.Set(At("2026-11-02T01:30:00Z"));
  Report("a", TaskState::kSucceeded, 0);  // attempt 2: 00:30 to 01:30
  RunPosted();
  ASSERT_EQ(GetJob(id).state, JobState::kSucceeded);
  Start();  // and read back by a master that saw none of it

  UsageReport total = Usage("2026-11-01T00:00:00Z", "2026-11-03T00:00:00Z");
  ASSERT_EQ(total.rows.size(), 1u);
  const UsageRow& row = total.rows[0];
  EXPECT_EQ(row.team, "default");
  EXPECT_EQ(row.user, "ada");
  EXPECT_DOUBLE_EQ(row.gpu_hours, 5.0);  // 2 GPUs x 90 min + 2 GPUs x 60 min
  EXPECT_DOUBLE_EQ(row.cpu_hours, 2.5);  // 1 CPU x 150 min
  EXPECT_EQ(row.jobs_submitted, 1);
  EXPECT_EQ(row.attempts, 2);
  EXPECT_EQ(row.jobs_succeeded, 1);
  EXPECT_EQ(row.jobs_failed, 0);
  EXPECT_EQ(row.jobs_started, 1);
  EXPECT_EQ(row.queue_delay_total, std::chrono::minutes(10));
  EXPECT_EQ(row.queue_delay_max, std::chrono::minutes(10));
  EXPECT_DOUBLE_EQ(total.total.gpu_hours, 5.0);

  UsageReport days = Usage("2026-11-01T00:00:00Z", "2026-11-03T00:00:00Z", UsagePeriod::kDay);
  ASSERT_EQ(days.rows.size(), 2u);
  EXPECT_EQ(days.rows[0].start, At("2026-11-01T00:00:00Z"));
  EXPECT_EQ(days.rows[0].end, At("2026-11-02T00:00:00Z"));
  EXPECT_DOUBLE_EQ(days.rows[0].gpu_hours, 2.0);  // 23:00 to midnight
  EXPECT_EQ(days.rows[0].jobs_submitted, 1);
  EXPECT_EQ(days.rows[0].attempts, 1);
  EXPECT_EQ(days.rows[0].jobs_succeeded, 0);
  EXPECT_EQ(days.rows[1].start, At("2026-11-02T00:00:00Z"));
  EXPECT_DOUBLE_EQ(days.rows[1].gpu_hours, 3.0);  // midnight to 00:30, then 00:30 to 01:30
  EXPECT_EQ(days.rows[1].jobs_submitted, 0);
  EXPECT_EQ(days.rows[1].attempts, 1);
  EXPECT_EQ(days.rows[1].jobs_succeeded, 1);
  EXPECT_EQ(days.rows[1].jobs_started, 0);  // the second attempt is no first start
  EXPECT_DOUBLE_EQ(days.total.gpu_hours, 5.0);

  // Clipped to the range asked for: 00:00 to 01:00 holds 30 min of each attempt.
  EXPECT_DOUBLE_EQ(Usage("2026-11-02T00:00:00Z", "2026-11-02T01:00:00Z").total.gpu_hours, 2.0);
  // 2026-11-02 was a Monday: the week split is at its midnight too.
  UsageReport weeks = Usage("2026-10-26T00:00:00Z", "2026-11-09T00:00:00Z", UsagePeriod::kWeek);
  ASSERT_EQ(weeks.rows.size(), 2u);
  EXPECT_EQ(weeks.rows[0].start, At("2026-10-26T00:00:00Z"));
  EXPECT_DOUBLE_EQ(weeks.rows[0].gpu_hours, 2.0);
  EXPECT_EQ(weeks.rows[1].start, At("2026-11-02T00:00:00Z"));
  EXPECT_DOUBLE_EQ(weeks.rows[1].gpu_hours, 3.0);
}

// A running job counts up to now, as the master's clock says, and keeps counting after a restart.
TEST_P(AccountingTest, RunningJobsCountUpToNow) {
  clock_.Set(At("2026-11-02T10:00:00Z"));
  AddNode("a", 4);
  JobId id = Submit(2, 1);
  RunPosted();
  Report("a", TaskState::kRunning);
  ASSERT_EQ(GetJob(id).state, JobState::kRunning);
  clock_.Set(At("2026-11-02T10:45:00Z"));
  EXPECT_DOUBLE_EQ(Usage("2026-11-02", "2026-11-03").total.gpu_hours, 1.5);  // 2 x 45 min
  Restart("a");
  clock_.Set(At("2026-11-02T11:00:00Z"));
  UsageReport report = Usage("2026-11-02", "2026-11-03");
  EXPECT_DOUBLE_EQ(report.total.gpu_hours, 2.0);
  EXPECT_EQ(report.total.jobs_succeeded + report.total.jobs_failed + report.total.jobs_killed, 0);
  // Nothing is counted beyond `until`, nor before `since`.
  EXPECT_DOUBLE_EQ(Usage("2026-11-02T10:30:00Z", "2026-11-02T10:40:00Z").total.gpu_hours, 2.0 / 6);
}

TEST_P(AccountingTest, GroupsByTeamAndUserAndFiltersByEither) {
  clock_.Set(At("2026-11-02T10:00:00Z"));
  ASSERT_TRUE(master_->teams().Set(TeamQuota{"vision", 0, std::nullopt}).ok());
  AddNode("a", 8);
  auto vision = master_->Submit(MakeSpec(1, 4, 1, "vision"), "bob");
  ASSERT_TRUE(vision.ok());
  JobId ada = Submit(1, 2);
  JobId killed = Submit(1, 1);
  RunPosted();
  Report("a", TaskState::kRunning);
  clock_.Set(At("2026-11-02T11:00:00Z"));
  ASSERT_TRUE(master_->Kill(killed, "user ada").ok());
  Report("a", TaskState::kKilled);  // every task: the other jobs end too
  RunPosted();
  ASSERT_EQ(GetJob(ada).state, JobState::kFailed);
  ASSERT_EQ(GetJob(killed).state, JobState::kKilled);

  UsageReport all = Usage("2026-11-02", "2026-11-03");
  ASSERT_EQ(all.rows.size(), 2u);
  EXPECT_EQ(all.rows[0].team, "default");
  EXPECT_EQ(all.rows[0].user, "ada");
  EXPECT_DOUBLE_EQ(all.rows[0].gpu_hours, 3.0);  // 2 + 1 GPUs for an hour
  EXPECT_EQ(all.rows[0].jobs_submitted, 2);
  EXPECT_EQ(all.rows[0].jobs_failed, 1);
  EXPECT_EQ(all.rows[0].jobs_killed, 1);
  EXPECT_EQ(all.rows[1].team, "vision");
  EXPECT_EQ(all.rows[1].user, "bob");
  EXPECT_DOUBLE_EQ(all.rows[1].gpu_hours, 4.0);
  EXPECT_DOUBLE_EQ(all.total.gpu_hours, 7.0);
  EXPECT_EQ(all.total.jobs_submitted, 3);

  UsageReport team = Usage("2026-11-02", "2026-11-03", UsagePeriod::kTotal, "vision");
  ASSERT_EQ(team.rows.size(), 1u);
  EXPECT_EQ(team.rows[0].user, "bob");
  UsageReport user = Usage("2026-11-02", "2026-11-03", UsagePeriod::kTotal, "", "ada");
  ASSERT_EQ(user.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(user.total.gpu_hours, 3.0);
  EXPECT_TRUE(Usage("2026-11-02", "2026-11-03", UsagePeriod::kTotal, "nlp").rows.empty());
}

TEST_P(AccountingTest, QueueingDelayIsTheMeanAndMaxOfFirstStarts) {
  clock_.Set(At("2026-11-02T10:00:00Z"));
  JobId first = Submit(1, 1);
  clock_.Set(At("2026-11-02T10:20:00Z"));
  JobId second = Submit(1, 1);
  clock_.Set(At("2026-11-02T10:30:00Z"));
  AddNode("a", 2);
  RunPosted();  // both start at 10:30, after 30 and 10 minutes
  ASSERT_EQ(GetJob(first).state, JobState::kStarting);
  ASSERT_EQ(GetJob(second).state, JobState::kStarting);
  UsageReport report = Usage("2026-11-02", "2026-11-03");
  EXPECT_EQ(report.total.jobs_started, 2);
  EXPECT_EQ(report.total.queue_delay_total, std::chrono::minutes(40));
  EXPECT_EQ(report.total.queue_delay_max, std::chrono::minutes(30));
}

TEST_P(AccountingTest, BadQueriesAreRefusedNamingTheField) {
  auto empty = master_->usage().Compute(UsageQuery{
      At("2026-11-02T00:00:00Z"), At("2026-11-02T00:00:00Z"), "", "", UsagePeriod::kTotal});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), ::testing::HasSubstr("since: "));
  auto long_days = master_->usage().Compute(UsageQuery{
      At("2020-01-01T00:00:00Z"), At("2026-01-01T00:00:00Z"), "", "", UsagePeriod::kDay});
  ASSERT_FALSE(long_days.ok());
  EXPECT_THAT(long_days.status().message(), ::testing::HasSubstr("at most 1000 periods"));
  // The same range by week fits.
  EXPECT_TRUE(master_->usage()
                  .Compute(UsageQuery{At("2020-01-01T00:00:00Z"), At("2026-01-01T00:00:00Z"), "",
                                      "", UsagePeriod::kWeek})
                  .ok());
}

// Entries older than the retention go, at most once an hour.
TEST_P(AccountingTest, AuditRetentionPrunesOldEntriesAtMostOnceAnHour) {
  auto begin = [&](const std::string& path) {
    state::AuditEntry e;
    e.user = "ada";
    e.remote = "127.0.0.1:5000";
    e.method = "POST";
    e.path = path;
    auto seq = master_->audit().Begin(e);
    EXPECT_TRUE(seq.ok());
    return seq.ok() ? *seq : 0;
  };
  auto paths = [&] {
    auto entries =
        master_->audit().Read(state::AuditQuery{FromMicros(0), FromMicros(INT64_MAX), "", 100, ""});
    EXPECT_TRUE(entries.ok());
    std::vector<std::string> out;
    for (const auto& e : *entries) out.push_back(e.path);
    return out;
  };
  Timestamp t0 = At("2026-01-01T00:00:00Z");
  clock_.Set(t0);
  master_->Tick();  // the first round: nothing to prune
  int64_t rounds = store_->Calls(Call::kPruneAudit);
  EXPECT_EQ(rounds, 1);
  begin("/a");  // t0
  clock_.Set(t0 + std::chrono::minutes(30));
  begin("/b");
  clock_.Set(t0 + std::chrono::hours(24 * 90) + std::chrono::minutes(10));
  begin("/c");
  master_->Tick();  // /a is older than 90 days
  EXPECT_EQ(store_->Calls(Call::kPruneAudit), rounds + 1);
  EXPECT_EQ(paths(), (std::vector<std::string>{"/b", "/c"}));
  clock_.Advance(std::chrono::minutes(30));  // /b is now too old, but the last round was 30 min ago
  master_->Tick();
  EXPECT_EQ(store_->Calls(Call::kPruneAudit), rounds + 1);
  EXPECT_EQ(paths(), (std::vector<std::string>{"/b", "/c"}));
  clock_.Advance(std::chrono::minutes(30));
  master_->Tick();
  EXPECT_EQ(store_->Calls(Call::kPruneAudit), rounds + 2);
  EXPECT_EQ(paths(), (std::vector<std::string>{"/c"}));
}

INSTANTIATE_TEST_SUITE_P(Scheduling, AccountingTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "BetweenPasses" : "FullPasses";
                         });

}  // namespace
}  // namespace cohort::master
