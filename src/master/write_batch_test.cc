// Group commit (Journal::Batch): an agent's report that changes many jobs, and a pass that
// starts many, are one commit of the store; nobody hears of those changes before it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "master/master_test_fixture.h"

namespace cohort::master {
namespace {

using Call = cohort::testing::FailingStateStore::Call;

// For each job the listener hears of: how many batches the store had committed by then.
class CommitsSeen final : public MasterListener {
 public:
  explicit CommitsSeen(const cohort::testing::FailingStateStore& store) : store_(store) {}
  void OnJobChanged(JobId id) override { jobs[id] = store_.Calls(Call::kCommitBatch); }
  void OnNodeChanged(const std::string& node) override {
    nodes[node] = store_.Calls(Call::kCommitBatch);
  }
  std::map<JobId, int64_t> jobs;
  std::map<std::string, int64_t> nodes;

 private:
  const cohort::testing::FailingStateStore& store_;
};

class WriteBatchTest : public MasterTest {};

TEST_P(WriteBatchTest, AReportThatChangesFourJobsIsOneCommitHeardOfAfterIt) {
  AddNode("a", 4);
  std::vector<JobId> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back(Submit(1, 1));
  RunPosted();
  for (JobId id : jobs) ASSERT_EQ(GetJob(id).state, JobState::kStarting);
  CommitsSeen seen(*store_);
  master_->SetListener(&seen);
  int64_t saves = store_->Calls(Call::kSaveJob);
  int64_t commits = store_->Calls(Call::kCommitBatch);
  Report("a", TaskState::kRunning);
  master_->SetListener(nullptr);
  EXPECT_EQ(store_->Calls(Call::kSaveJob) - saves, 4) << "each job written";
  EXPECT_EQ(store_->Calls(Call::kCommitBatch) - commits, 1) << "in one commit";
  ASSERT_EQ(seen.jobs.size(), 4u);
  for (JobId id : jobs) {
    EXPECT_EQ(GetJob(id).state, JobState::kRunning);
    EXPECT_EQ(seen.jobs[id], commits + 1) << "job " << id << " announced before its commit";
  }
  EXPECT_TRUE(fail_stops_.empty());
}

TEST_P(WriteBatchTest, APassThatStartsFourJobsIsOneCommitHeardOfAfterIt) {
  if (GetParam()) GTEST_SKIP() << "between passes, each arrival starts as it is submitted";
  AddNode("a", 4);
  std::vector<JobId> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back(Submit(1, 1));
  CommitsSeen seen(*store_);
  master_->SetListener(&seen);
  int64_t saves = store_->Calls(Call::kSaveJob);
  int64_t commits = store_->Calls(Call::kCommitBatch);
  ASSERT_EQ(posted_.size(), 1u) << "one pass asked for";
  auto pass = posted_.front();
  posted_.pop_front();
  pass();
  master_->SetListener(nullptr);
  EXPECT_EQ(store_->Calls(Call::kSaveJob) - saves, 4);
  EXPECT_EQ(store_->Calls(Call::kCommitBatch) - commits, 1);
  for (JobId id : jobs) {
    EXPECT_EQ(GetJob(id).state, JobState::kStarting);
    EXPECT_EQ(seen.jobs[id], commits + 1) << "job " << id << " announced before its commit";
  }
  EXPECT_EQ(seen.nodes["a"], commits + 1) << "the agent told of its tasks before the commit";
}

// A write that fails in a batch fails stop, and what the batch changed is never announced.
TEST_P(WriteBatchTest, AFailedWriteInABatchFailsStopAndAnnouncesNothing) {
  AddNode("a", 2);
  JobId first = Submit(1, 1);
  JobId second = Submit(1, 1);
  RunPosted();
  CommitsSeen seen(*store_);
  master_->SetListener(&seen);
  store_->FailNextWrites(1, {Call::kSaveJob});
  EXPECT_FALSE(master_->nodes().Sync("a", ReportOf("a", TaskState::kRunning)).ok());
  master_->SetListener(nullptr);
  EXPECT_FALSE(fail_stops_.empty());
  EXPECT_FALSE(seen.jobs.count(first)) << "announced after the master failed stop";
  EXPECT_FALSE(seen.jobs.count(second)) << "announced after the master failed stop";
}

INSTANTIATE_TEST_SUITE_P(Scheduling, WriteBatchTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "BetweenPasses" : "FullPasses";
                         });

}  // namespace
}  // namespace cohort::master
