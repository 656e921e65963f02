// The master's runtime history against its real code and a real SQLite file: which ends teach it,
// the estimates it hands the scheduler and `cohort why`, a failed write, a restart, and the cap
// on its keys.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "master/master_test_fixture.h"

namespace cohort::master {
namespace {

using Call = cohort::testing::FailingStateStore::Call;
using std::chrono::hours;
using std::chrono::minutes;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class HistoryTest : public MasterTest {
 protected:
  void SetUp() override {
    // Hours pass between reports here: the node must not be lost for its silence.
    node_timeout_ = hours(24 * 30);
    MasterTest::SetUp();
  }

  JobId SubmitNamed(const std::string& name, int max_attempts = 1) {
    JobSpec spec = MakeSpec(1, 1, max_attempts);
    spec.name = name;
    auto job = master_->Submit(spec, "ada");
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? job->id : 0;
  }

  // Runs a job of one GPU alone on node "a" for `ran`, and ends it as `end`.
  JobId RunFor(const std::string& name, Duration ran, TaskState end = TaskState::kSucceeded) {
    JobId id = SubmitNamed(name);
    RunPosted();
    EXPECT_EQ(GetJob(id).state, JobState::kStarting);
    Report("a", TaskState::kRunning);
    clock_.Advance(ran);
    Report("a", end, end == TaskState::kSucceeded ? 0 : 1);
    RunPosted();
    EXPECT_TRUE(IsTerminal(GetJob(id).state)) << JobStateName(GetJob(id).state);
    return id;
  }

  // The store's row of `key` (samples 0: none).
  RuntimeHistoryRow Row(const std::string& key) {
    auto rows = store_->LoadRuntimeHistory();
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    for (const auto& row : *rows) {
      if (row.key == key) return row;
    }
    return RuntimeHistoryRow{key, 0, 0, 0};
  }
  size_t StoredRows() {
    auto rows = store_->LoadRuntimeHistory();
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? rows->size() : 0;
  }

  // The line of `cohort why` that starts with `prefix`.
  std::string Why(JobId id, const std::string& prefix) {
    auto e = master_->Explain(id);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    for (const auto& line : e->details) {
      if (line.starts_with(prefix)) return line;
    }
    return "no line starting with \"" + prefix + "\"";
  }
};

TEST_P(HistoryTest, EndsAfterRunningTeachAndTheOthersDoNot) {
  AddNode("a", 1);
  RunFor("ok", hours(1));
  EXPECT_EQ(Row("*").samples, 1);
  EXPECT_DOUBLE_EQ(Row("*").mean_seconds, 3600);
  EXPECT_EQ(Row("t=default|u=ada|n=ok|g=1").samples, 1);
  // A failure after running teaches: jobs like it cost that much.
  EXPECT_EQ(GetJob(RunFor("crash", minutes(30), TaskState::kFailed)).state, JobState::kFailed);
  EXPECT_EQ(Row("*").samples, 2);
  EXPECT_DOUBLE_EQ(Row("*").mean_seconds, 2700);
  // So does a kill while it runs: people stop jobs that have done enough.
  JobId killed = SubmitNamed("killed");
  RunPosted();
  Report("a", TaskState::kRunning);
  clock_.Advance(minutes(15));
  ASSERT_TRUE(master_->Kill(killed, "user ada").ok());
  Report("a", TaskState::kKilled);
  RunPosted();
  ASSERT_EQ(GetJob(killed).state, JobState::kKilled);
  EXPECT_EQ(Row("*").samples, 3);
  EXPECT_EQ(Row("t=default|u=ada|n=killed|g=1").mean_seconds, 15 * 60);
  // Every attempt counts, the last one included: 10 minutes failed, then 20 that succeed.
  JobId retried = SubmitNamed("retried", /*max_attempts=*/2);
  RunPosted();
  Report("a", TaskState::kRunning);
  clock_.Advance(minutes(10));
  Report("a", TaskState::kFailed, 1);
  RunPosted();
  ASSERT_EQ(GetJob(retried).attempt, 2);
  Report("a", TaskState::kRunning);
  clock_.Advance(minutes(20));
  Report("a", TaskState::kSucceeded, 0);
  RunPosted();
  ASSERT_EQ(GetJob(retried).state, JobState::kSucceeded);
  EXPECT_EQ(Row("t=default|u=ada|n=retried|g=1").mean_seconds, 30 * 60);
  EXPECT_EQ(Row("*").samples, 4);

  // Killed while pending (it needs more GPUs than node "a" has): it never ran.
  JobSpec big = MakeSpec(1, 2);
  big.name = "pending";
  JobId pending = master_->Submit(big, "ada")->id;
  RunPosted();
  ASSERT_TRUE(master_->Kill(pending, "user ada").ok());
  ASSERT_EQ(GetJob(pending).state, JobState::kKilled);
  // Its task could not start (the agent reports no process): its time says nothing either.
  JobId unstarted = SubmitNamed("unstarted");
  RunPosted();
  auto desired = master_->nodes().DesiredFor("a");
  ASSERT_TRUE(desired.ok());
  AgentReport report;
  report.applied_version = desired->version;
  for (const auto& t : desired->tasks) {
    report.tasks.push_back(TaskReport{t.id, TaskState::kFailed, 126, std::nullopt, 0, clock_.Now(),
                                      clock_.Now(), "no Unix account ada on a"});
  }
  ASSERT_TRUE(master_->nodes().Sync("a", report).ok());
  RunPosted();
  ASSERT_EQ(GetJob(unstarted).state, JobState::kFailed);
  EXPECT_EQ(Row("*").samples, 4);
  EXPECT_EQ(Row("t=default|u=ada|n=pending|g=1").samples, 0);
  EXPECT_EQ(Row("t=default|u=ada|n=unstarted|g=1").samples, 0);
  // What the store has is what the master has.
  auto rows = store_->LoadRuntimeHistory();
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, master_->runtime_history().Entries());
  EXPECT_TRUE(fail_stops_.empty());
}

TEST_P(HistoryTest, AShortJobGoesBeforeALongOneOfItsLevelAndTheEstimateSurvivesARestart) {
  AddNode("a", 1);
  for (int i = 0; i < 3; ++i) {
    RunFor("long", hours(1));
    RunFor("short", minutes(5));
  }
  JobId blocker = SubmitNamed("blocker");
  RunPosted();
  Report("a", TaskState::kRunning);
  JobId long_job = SubmitNamed("long");
  clock_.Advance(std::chrono::seconds(1));
  JobId short_job = SubmitNamed("short");
  RunPosted();
  EXPECT_EQ(Why(short_job, "level "),
            "level 0 of 0-2 (below 1 GPU-hour): no GPU time attained; estimated 5 GPU-minutes "
            "from 3 finished jobs named short by ada in team default with 1 GPU, about 5 "
            "GPU-minutes left");
  EXPECT_EQ(master_->Explain(short_job)->ahead, std::optional<size_t>(0));
  EXPECT_EQ(master_->Explain(long_job)->ahead, std::optional<size_t>(1));

  size_t keys = master_->runtime_history().size();
  Start();  // the same database
  Report("a", TaskState::kRunning);
  RunPosted();
  EXPECT_EQ(master_->runtime_history().size(), keys);
  EXPECT_EQ(Why(long_job, "level "),
            "level 0 of 0-2 (below 1 GPU-hour): no GPU time attained; estimated 1 GPU-hour from "
            "3 finished jobs named long by ada in team default with 1 GPU, about 1 GPU-hour left");
  auto e = master_->Explain(long_job);
  ASSERT_TRUE(e->rank && e->rank->estimate);
  EXPECT_EQ(e->rank->estimate->gpu_time, hours(1));
  EXPECT_EQ(e->rank->estimate->samples, 3);
  // The GPU frees: the short job starts, submitted later.
  Report("a", TaskState::kSucceeded, 0);
  RunPosted();
  ASSERT_EQ(GetJob(blocker).state, JobState::kSucceeded);
  EXPECT_EQ(GetJob(short_job).state, JobState::kStarting);
  EXPECT_EQ(GetJob(long_job).state, JobState::kPending);
}

TEST_P(HistoryTest, WhyNamesTheLevelNothingToGoByAndThePromotion) {
  AddNode("a", 1);
  JobId blocker = SubmitNamed("blocker");
  RunPosted();
  Report("a", TaskState::kRunning);
  JobId waiting = SubmitNamed("waiting");
  RunPosted();
  EXPECT_EQ(Why(waiting, "level "),
            "level 0 of 0-2 (below 1 GPU-hour): no GPU time attained; nothing to go by yet "
            "(fewer than 3 jobs like it have ended)");
  EXPECT_EQ(Why(waiting, "not promoted"),
            "not promoted: waited 0ms; promoted once it has waited 2h");
  EXPECT_FALSE(master_->Explain(waiting)->rank->promoted);
  clock_.Advance(hours(3) + minutes(10));
  master_->Tick();
  EXPECT_THAT(Why(waiting, "promoted"), StartsWith("promoted: waited 3h10m (more than 2h); "));
  EXPECT_TRUE(master_->Explain(waiting)->rank->promoted);
  EXPECT_EQ(master_->Explain(blocker)->rank, std::nullopt) << "a running job has no rank";

  // A job requeued after 2 hours on its GPU is in level 1, and promoted only after waiting
  // twice as long as it ran.
  ASSERT_TRUE(master_->Kill(waiting, "user ada").ok());
  Report("a", TaskState::kSucceeded, 0);
  RunPosted();
  JobId requeued = SubmitNamed("requeued", /*max_attempts=*/2);
  RunPosted();
  Report("a", TaskState::kRunning);
  clock_.Advance(hours(2));
  Report("a", TaskState::kFailed, 1);
  JobId holder = SubmitNamed("holder");  // takes the GPU first: submitted, not requeued, later
  RunPosted();
  ASSERT_EQ(GetJob(requeued).state, JobState::kPending);
  ASSERT_EQ(GetJob(holder).state, JobState::kStarting);
  EXPECT_EQ(Why(requeued, "level "),
            "level 1 of 0-2 (1 to 16 GPU-hours): 2 GPU-hours attained; nothing to go by yet "
            "(fewer than 3 jobs like it have ended)");
  EXPECT_EQ(Why(requeued, "not promoted"),
            "not promoted: waited 0ms; promoted once it has waited 4h");
  // las ranks by level alone: no estimate, no promotion.
  scheduler_config_.policy = scheduler::Policy::kLeastAttainedService;
  Start();
  Report("a", TaskState::kRunning);
  RunPosted();
  EXPECT_EQ(Why(requeued, "level "), "level 1 of 0-2 (1 to 16 GPU-hours): 2 GPU-hours attained");
  EXPECT_EQ(master_->Explain(requeued)->rank->promoted_at, std::nullopt);
  scheduler_config_.policy = scheduler::Policy::kFifo;
  Start();
  EXPECT_EQ(master_->Explain(requeued)->rank, std::nullopt);
}

TEST_P(HistoryTest, AnEndWhoseWriteFailsTeachesNothingUntilItIsWritten) {
  AddNode("a", 1);
  for (int i = 0; i < 3; ++i) RunFor("x", hours(1));
  JobId id = SubmitNamed("x");
  RunPosted();
  Report("a", TaskState::kRunning);
  clock_.Advance(hours(4));
  store_->FailNextWrites(1, {Call::kSaveJob});
  EXPECT_FALSE(
      master_->nodes().Sync("a", ReportOf("a", TaskState::kSucceeded, 0, clock_.Now())).ok());
  // The master failed stop (the test's handler returns): neither memory nor store has the end.
  ASSERT_EQ(fail_stops_.size(), 1u);
  EXPECT_EQ(Row("*").samples, 3);
  EXPECT_EQ(master_->runtime_history().Estimate({"default", "ada", "x", 1})->samples, 3);
  // Restarted, the master has the job running as the store does; its end is written this time.
  Start();
  ASSERT_EQ(GetJob(id).state, JobState::kRunning);
  EXPECT_EQ(master_->runtime_history().Estimate({"default", "ada", "x", 1})->samples, 3);
  Report("a", TaskState::kSucceeded, 0);
  RunPosted();
  ASSERT_EQ(GetJob(id).state, JobState::kSucceeded);
  EXPECT_EQ(Row("*").samples, 4);
  EXPECT_EQ(master_->runtime_history().Estimate({"default", "ada", "x", 1})->samples, 4);
}

TEST_P(HistoryTest, TheStoreKeepsNoMoreRowsThanTheCap) {
  history_max_keys_ = 10;
  Start();
  AddNode("a", 1);
  // The first job makes six keys; each new name two more (its own, and its team's of that name).
  for (int i = 0; i < 6; ++i) {
    RunFor("job" + std::to_string(i), minutes(1));
    EXPECT_LE(StoredRows(), 10u);
    EXPECT_EQ(StoredRows(), master_->runtime_history().size());
  }
  EXPECT_EQ(StoredRows(), 10u);
  // The newest names are kept, the oldest went.
  EXPECT_EQ(Row("t=default|u=ada|n=job5|g=1").samples, 1);
  EXPECT_EQ(Row("t=default|u=ada|n=job0|g=1").samples, 0);
  EXPECT_EQ(Row("*").samples, 6);
  Start();
  EXPECT_EQ(master_->runtime_history().size(), 10u);
}

INSTANTIATE_TEST_SUITE_P(Scheduling, HistoryTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "BetweenPasses" : "FullPasses";
                         });

}  // namespace
}  // namespace cohort::master
