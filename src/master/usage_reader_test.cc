// Usage reports on the reader's thread: the same figures as on the event loop, answered through
// the loop, and a bounded number under way at once.
#include "master/usage_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "common/units.h"
#include "master/master_test_fixture.h"

namespace cohort::master {
namespace {

Timestamp At(const char* text) { return *ParseTimeSpec(text, Timestamp{}); }

// A store whose usage scan waits until released: a report that takes as long as a test wants.
class SlowStore final : public state::StateStore {
 public:
  std::promise<void> release;
  std::shared_future<void> released{release.get_future().share()};

  Status ScanUsage(const state::UsageScan& scan,
                   const std::function<void(const state::TaskUsage&)>& hold) override {
    released.wait();
    hold(state::TaskUsage{1, 1, "main/0", "vision", "ada", 2, 1000, scan.since, scan.until});
    return Status::Ok();
  }
  Status ScanMilestones(const state::UsageScan&,
                        const std::function<void(const state::JobMilestone&)>&) override {
    return Status::Ok();
  }

  // Nothing else is read by a report.
  StatusOr<Job> CreateJob(Job, std::vector<JobEvent>) override { return Unused(); }
  using StateStore::SaveJob;
  Status SaveJob(const Job&, const std::vector<JobEvent>&, const std::vector<state::TaskUsage>&,
                 const RuntimeHistoryChange&) override {
    return Unused();
  }
  StatusOr<std::vector<Job>> LoadJobs() override { return Unused(); }
  StatusOr<state::EventPage> ReadEvents(JobId, const state::EventRange&) override {
    return Unused();
  }
  StatusOr<std::vector<RuntimeHistoryRow>> LoadRuntimeHistory() override { return Unused(); }
  Status SaveTeam(const TeamQuota&) override { return Unused(); }
  Status DeleteTeam(const std::string&) override { return Unused(); }
  StatusOr<std::vector<TeamQuota>> LoadTeams() override { return Unused(); }
  Status SaveNode(const Node&) override { return Unused(); }
  Status DeleteNode(const std::string&) override { return Unused(); }
  StatusOr<std::vector<Node>> LoadNodes() override { return Unused(); }
  StatusOr<int64_t> BeginAudit(const state::AuditEntry&) override { return Unused(); }
  Status FinishAudit(int64_t, int, const std::string&, const std::string&) override {
    return Unused();
  }
  StatusOr<std::vector<state::AuditEntry>> LoadAudit(const state::AuditQuery&) override {
    return Unused();
  }
  StatusOr<int64_t> PruneAudit(Timestamp, int64_t) override { return Unused(); }
  Status SaveUser(const User&) override { return Unused(); }
  Status DeleteUser(const std::string&) override { return Unused(); }
  StatusOr<std::vector<User>> LoadUsers() override { return Unused(); }
  Status SaveToken(const TokenRecord&) override { return Unused(); }
  Status DeleteToken(const std::string&) override { return Unused(); }
  StatusOr<std::vector<TokenRecord>> LoadTokens() override { return Unused(); }
  Status SaveSecret(const Secret&) override { return Unused(); }
  Status DeleteSecret(SecretScope, const std::string&, const std::string&) override {
    return Unused();
  }
  StatusOr<std::vector<Secret>> LoadSecrets() override { return Unused(); }
  Status SaveSweep(const SweepRecord&) override { return Unused(); }
  StatusOr<std::vector<SweepRecord>> LoadSweeps() override { return Unused(); }
  int SchemaVersion() const override { return 0; }

 private:
  static Status Unused() { return Status::Internal("not used by usage reports"); }
};

// The event loop, as a queue the test runs; safe to post to from the reader's thread.
class PostedWork {
 public:
  UsageReader::Post Post() {
    return [this](std::function<void()> work) {
      std::lock_guard lock(mu_);
      work_.push_back(std::move(work));
    };
  }
  // Runs what was posted until `n` callbacks have run or 10 s pass.
  void RunUntil(const int& done, int n) {
    for (int i = 0; i < 1000 && done < n; ++i) {
      std::vector<std::function<void()>> work;
      {
        std::lock_guard lock(mu_);
        work.swap(work_);
      }
      for (auto& w : work) w();
      if (done < n) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

 private:
  std::mutex mu_;
  std::vector<std::function<void()>> work_;
};

TEST(UsageReader, ReportsWaitInABoundedQueueAndAnswerOnTheLoop) {
  auto store = std::make_unique<SlowStore>();
  std::promise<void>& release = store->release;
  PostedWork loop;
  int answered = 0;
  std::vector<StatusOr<UsageReport>> reports;
  {
    UsageReader reader(std::move(store), loop.Post());
    UsageQuery query{At("2026-11-02"), At("2026-11-02T01:00:00Z"), "", "", UsagePeriod::kTotal};
    auto done = [&](StatusOr<UsageReport> r) {
      ++answered;
      reports.push_back(std::move(r));
    };
    for (size_t i = 0; i <= kMaxUsageReports; ++i) reader.Submit(query, At("2026-11-03"), done);
    // One too many: refused at once, without waiting for the others.
    ASSERT_EQ(answered, 1);
    EXPECT_EQ(reports[0].status().code(), StatusCode::kUnavailable);
    EXPECT_THAT(reports[0].status().message(), ::testing::HasSubstr("try again"));
    release.set_value();
    loop.RunUntil(answered, kMaxUsageReports + 1);
  }
  ASSERT_EQ(reports.size(), kMaxUsageReports + 1);
  for (size_t i = 1; i < reports.size(); ++i) {
    ASSERT_TRUE(reports[i].ok()) << reports[i].status().ToString();
    EXPECT_DOUBLE_EQ(reports[i]->total.gpu_hours, 2.0);
  }
}

class UsageReaderMasterTest : public MasterTest {};

// Through the master: a second connection to its SQLite file, on the reader's thread, gives what
// the master's own store gives.
TEST_P(UsageReaderMasterTest, ReportsOnTheReadersThreadMatchTheLoopsOwn) {
  clock_.Set(At("2026-11-02T10:00:00Z"));
  AddNode("a", 4);
  Submit(2, 2);
  RunPosted();
  Report("a", TaskState::kRunning);
  clock_.Set(At("2026-11-02T11:30:00Z"));
  Report("a", TaskState::kSucceeded, 0);
  RunPosted();
  UsageQuery query{At("2026-11-02"), At("2026-11-03"), "", "", UsagePeriod::kDay};
  auto on_loop = master_->usage().Compute(query);
  ASSERT_TRUE(on_loop.ok());
  EXPECT_DOUBLE_EQ(on_loop->total.gpu_hours, 6.0);  // 4 GPUs for 90 min

  auto reader_store = state::OpenSqliteStateStore((dir_ / "cohort.db").string());
  ASSERT_TRUE(reader_store.ok());
  PostedWork loop;
  master_->usage().StartReader(std::move(reader_store).value(), loop.Post());
  int answered = 0;
  std::optional<StatusOr<UsageReport>> report;
  master_->usage().Compute(query, [&](StatusOr<UsageReport> r) {
    ++answered;
    report = std::move(r);
  });
  loop.RunUntil(answered, 1);
  ASSERT_TRUE(report && report->ok());
  EXPECT_DOUBLE_EQ((*report)->total.gpu_hours, 6.0);
  EXPECT_EQ((*report)->rows.size(), 1u);
  EXPECT_EQ((*report)->total.jobs_succeeded, 1);
  // A bad query is refused at once, on the loop.
  int refused = 0;
  master_->usage().Compute(
      UsageQuery{At("2026-11-03"), At("2026-11-02"), "", "", UsagePeriod::kTotal},
      [&](StatusOr<UsageReport> r) {
        ++refused;
        EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
      });
  EXPECT_EQ(refused, 1);
}

INSTANTIATE_TEST_SUITE_P(Scheduling, UsageReaderMasterTest, ::testing::Values(false),
                         [](const ::testing::TestParamInfo<bool>&) { return "FullPasses"; });

}  // namespace
}  // namespace cohort::master
