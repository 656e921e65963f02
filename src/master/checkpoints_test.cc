// Checkpoints that agents report, against the master's real code and a real SQLite file: the
// job keeps its newest, the store has it across a restart, the scheduler chooses victims by it,
// and agents cannot make the master write a job more than once per 5 s.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "master/master_test_fixture.h"

namespace cohort::master {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

class CheckpointsTest : public MasterTest {
 protected:
  void SetUp() override {
    node_timeout_ = std::chrono::hours(1);  // minutes pass between reports
    MasterTest::SetUp();
  }

  // The agent on `node` reports every desired task running, the tasks of `job` with a
  // checkpoint at `at` (the agent's clock); with `attempt`, the checkpoint is of a task of that
  // attempt of the job instead.
  void ReportCheckpoint(const std::string& node, JobId job, Timestamp at,
                        std::optional<int> attempt = std::nullopt) {
    auto desired = master_->nodes().DesiredFor(node);
    ASSERT_TRUE(desired.ok());
    AgentReport report;
    report.applied_version = desired->version;
    for (const auto& t : desired->tasks) {
      TaskReport r{t.id, TaskState::kRunning, std::nullopt, std::nullopt,
                   100,  clock_.Now(),        std::nullopt};
      if (t.id.job == job && attempt) {
        // A task of another attempt, still on the agent, beside the current one.
        TaskReport other = r;
        other.id.attempt = *attempt;
        other.checkpoint_at = at;
        report.tasks.push_back(other);
      } else if (t.id.job == job) {
        r.checkpoint_at = at;
      }
      report.tasks.push_back(r);
    }
    ASSERT_TRUE(master_->nodes().Sync(node, report).ok());
  }

  // Two low-priority 1-GPU jobs fill a 2-GPU node, the second started a minute after the first;
  // returns them.
  std::pair<JobId, JobId> TwoRunningJobs() {
    AddNode("a", 2);
    JobId first = Submit(1, 1, 1, "default", kPriorityLow);
    RunPosted();
    clock_.Advance(minutes(1));
    JobId second = Submit(1, 1, 1, "default", kPriorityLow);
    RunPosted();
    Report("a", TaskState::kRunning);
    EXPECT_EQ(GetJob(first).state, JobState::kRunning);
    EXPECT_EQ(GetJob(second).state, JobState::kRunning);
    return {first, second};
  }

  // A high-priority 1-GPU job arrives, five minutes on; returns the job it preempted.
  std::optional<JobId> VictimOfAHighPriorityJob(JobId first, JobId second) {
    clock_.Advance(minutes(5));
    Report("a", TaskState::kRunning);
    JobId high = Submit(1, 1, 1, "default", kPriorityHigh);
    RunPosted();
    EXPECT_THAT(GetJob(high).message, HasSubstr("preempting"));
    bool first_stops = GetJob(first).state == JobState::kStopping;
    bool second_stops = GetJob(second).state == JobState::kStopping;
    if (first_stops == second_stops) return std::nullopt;
    return first_stops ? first : second;
  }
};

TEST_P(CheckpointsTest, WithoutACheckpointTheJobStartedLastIsTheVictim) {
  auto [first, second] = TwoRunningJobs();
  EXPECT_EQ(VictimOfAHighPriorityJob(first, second), second);
}

TEST_P(CheckpointsTest, TheVictimIsTheJobThatCheckpointedEvenAfterTheMasterRestarts) {
  auto [first, second] = TwoRunningJobs();
  clock_.Advance(minutes(1));
  const Timestamp at = clock_.Now() - seconds(2);  // the agent saw it a little earlier
  const uint64_t version = GetJob(first).version;
  ReportCheckpoint("a", first, at);
  EXPECT_EQ(GetJob(first).last_checkpoint_at, at);
  EXPECT_GT(GetJob(first).version, version) << "written, and watchers told";
  EXPECT_EQ(GetJob(second).last_checkpoint_at, std::nullopt);

  Start();  // the store has it, and the cluster core gets it back
  EXPECT_EQ(GetJob(first).last_checkpoint_at, at);
  EXPECT_EQ(VictimOfAHighPriorityJob(first, second), first);
  auto why = master_->Explain(second);
  ASSERT_TRUE(why.ok());
  EXPECT_THAT(why->details, ::testing::Contains(HasSubstr("no checkpoint reported")));
}

TEST_P(CheckpointsTest, CohortWhySaysHowLongAgoTheLastCheckpointWas) {
  auto [first, second] = TwoRunningJobs();
  ReportCheckpoint("a", first, clock_.Now());
  clock_.Advance(minutes(3));
  auto why = master_->Explain(first);
  ASSERT_TRUE(why.ok());
  EXPECT_THAT(why->details,
              ::testing::Contains("last checkpoint 3m ago: a preemption would lose the work since "
                                  "then"));
}

TEST_P(CheckpointsTest, OlderRepeatedAndEarlierAttemptsCheckpointsChangeNothing) {
  auto [first, second] = TwoRunningJobs();
  const Timestamp at = clock_.Now();
  ReportCheckpoint("a", first, at);
  const uint64_t version = GetJob(first).version;
  clock_.Advance(minutes(1));
  ReportCheckpoint("a", first, at);  // every report carries it
  ReportCheckpoint("a", first, at - seconds(1));
  ReportCheckpoint("a", first, clock_.Now(), /*attempt=*/0);  // not the current attempt
  EXPECT_EQ(GetJob(first).last_checkpoint_at, at);
  EXPECT_EQ(GetJob(first).version, version) << "nothing written";
}

TEST_P(CheckpointsTest, AgentsMakeTheMasterWriteAJobAtMostOncePerFiveSeconds) {
  auto [first, second] = TwoRunningJobs();
  const uint64_t version = GetJob(first).version;
  // A report every 100 ms for 10 s, each with a newer checkpoint (an agent that ignores its
  // own bound): two writes, at 0 s and 5 s.
  for (int i = 0; i < 100; ++i) {
    ReportCheckpoint("a", first, clock_.Now());
    clock_.Advance(milliseconds(100));
  }
  EXPECT_EQ(GetJob(first).version, version + 2);
  // The newest, refused meanwhile, is taken from the next report after the gap.
  const Timestamp newest = clock_.Now() - milliseconds(100);
  ReportCheckpoint("a", first, newest);
  EXPECT_EQ(GetJob(first).last_checkpoint_at, newest);
  EXPECT_EQ(GetJob(first).version, version + 3);
}

INSTANTIATE_TEST_SUITE_P(Scheduling, CheckpointsTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "BetweenPasses" : "FullPasses";
                         });

}  // namespace
}  // namespace cohort::master
