// A state disk short of space makes the master read-only instead of stopping it: nothing is
// changed, judged or started; agents are heard and their reports wait; a restart on the full disk
// starts read-only; once there is room everything reported meanwhile is applied
// (master/state_disk.h).
#include "master/master_test_fixture.h"

namespace cohort::master {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1ULL << 20;

TEST_P(MasterTest, AStateDiskShortOfSpaceMakesTheMasterReadOnlyAndItResumesByItself) {
  AddNode("n1", 2);
  JobId running = Submit(1, 1);
  RunPosted();
  Report("n1", TaskState::kRunning);
  ASSERT_EQ(GetJob(running).state, JobState::kRunning);
  ASSERT_FALSE(master_->read_only());

  state_disk_->Set(10 * kMiB);  // under the default reserve of 64 MiB
  master_->Tick();
  ASSERT_TRUE(master_->read_only());
  EXPECT_THAT(*master_->read_only(), HasSubstr("read-only"));
  EXPECT_THAT(*master_->read_only(), HasSubstr("--state-disk-reserve"));
  EXPECT_THAT(*master_->read_only(), HasSubstr(dir_.string()));

  auto refused = master_->Submit(MakeSpec(1, 1), "ada");
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(), HasSubstr("read-only"));
  EXPECT_EQ(master_->Kill(running, "user ada").status().code(), StatusCode::kUnavailable);

  // The task ends: the agent is heard, its report waits (nothing to forget yet).
  DesiredState answer = Report("n1", TaskState::kSucceeded, 0);
  EXPECT_TRUE(answer.forget.empty());
  ASSERT_EQ(answer.tasks.size(), 1u);
  EXPECT_EQ(GetJob(running).state, JobState::kRunning);
  // Time passes with the node heard: nothing is judged, nothing written, nothing stopped.
  for (int i = 0; i < 6; ++i) {
    clock_.Advance(std::chrono::seconds(5));
    Report("n1", TaskState::kSucceeded, 0);
    RunPosted();
  }
  EXPECT_TRUE(fail_stops_.empty());
  EXPECT_EQ(master_->nodes().List().front().node->state, NodeState::kReady);
  EXPECT_EQ(GetJob(running).state, JobState::kRunning);

  // Just over the reserve is not yet enough room: it resumes from 1.5 times the reserve.
  state_disk_->Set(80 * kMiB);
  master_->Tick();
  EXPECT_TRUE(master_->read_only());
  state_disk_->Set(96 * kMiB);
  master_->Tick();
  EXPECT_FALSE(master_->read_only());

  answer = Report("n1", TaskState::kSucceeded, 0);
  EXPECT_EQ(answer.forget.size(), 1u);
  EXPECT_EQ(GetJob(running).state, JobState::kSucceeded);
  EXPECT_TRUE(master_->Submit(MakeSpec(1, 1), "ada").ok());
  EXPECT_TRUE(fail_stops_.empty());
}

TEST_P(MasterTest, NothingIsStartedWhileReadOnlyAndWhatWaitsStartsAfter) {
  AddNode("n1", 1);
  JobId first = Submit(1, 1);
  JobId second = Submit(1, 1);
  RunPosted();
  Report("n1", TaskState::kRunning);
  ASSERT_EQ(GetJob(first).state, JobState::kRunning);
  ASSERT_EQ(GetJob(second).state, JobState::kPending);

  state_disk_->Set(0);
  master_->Tick();
  ASSERT_TRUE(master_->read_only());
  Report("n1", TaskState::kSucceeded, 0);
  master_->Schedule();
  RunPosted();
  EXPECT_EQ(GetJob(second).state, JobState::kPending);

  state_disk_->Set(1ULL << 30);
  RunPosted();  // the tick that finds room asks for a pass
  Report("n1", TaskState::kSucceeded, 0);
  RunPosted();
  EXPECT_EQ(GetJob(first).state, JobState::kSucceeded);
  EXPECT_NE(GetJob(second).state, JobState::kPending);  // placed on the freed GPU
}

// Without read-only mode this was a crash loop: a master restarted on a full disk stopped again
// at the first report it could not write.
TEST_P(MasterTest, AMasterRestartedOnAFullStateDiskStartsReadOnly) {
  AddNode("n1", 1);
  JobId job = Submit(1, 1);
  RunPosted();
  Report("n1", TaskState::kRunning);

  state_disk_free_ = 0;
  Start();
  ASSERT_TRUE(master_->read_only());
  EXPECT_EQ(master_->Submit(MakeSpec(1, 1), "ada").status().code(), StatusCode::kUnavailable);
  Report("n1", TaskState::kSucceeded, 0);
  EXPECT_EQ(GetJob(job).state, JobState::kRunning);
  EXPECT_TRUE(fail_stops_.empty());
}

}  // namespace
}  // namespace cohort::master
