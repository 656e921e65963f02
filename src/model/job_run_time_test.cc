#include "model/job_run_time.h"

#include <gtest/gtest.h>

namespace cohort {
namespace {

Timestamp At(int64_t seconds) { return FromMicros(seconds * 1'000'000); }

Job TwoGpuJob() {
  Job job;
  TaskGroupSpec group;
  group.role = "worker";
  group.resources.gpus = 2;
  job.spec.tasks.push_back(group);
  return job;
}

TEST(JobRunTime, APendingJobHasRunNothing) {
  Job job = TwoGpuJob();
  EXPECT_EQ(AttemptRunTime(job, At(100)), Duration{});
  EXPECT_EQ(TotalRunTime(job, At(100)), Duration{});
}

// Requeued twice, now running its third attempt: the attempt's time is only the third's, the
// total counts all three.
TEST(JobRunTime, TheTotalCountsEveryAttemptAndTheAttemptOnlyTheCurrentOne) {
  Job job = TwoGpuJob();
  RecordAttempt(job, AttemptSummary{1, At(10), At(70), "failed: worker/0 exited with code 1", {}});
  RecordAttempt(job, AttemptSummary{2, At(100), At(130), "preempted", {}});
  job.attempt = 3;
  job.state = JobState::kRunning;
  job.placed_at = At(200);
  EXPECT_EQ(AttemptRunTime(job, At(250)), std::chrono::seconds(50));
  EXPECT_EQ(TotalRunTime(job, At(250)), std::chrono::seconds(60 + 30 + 50));

  // Ended: both stop at its end, which the history now holds.
  RecordAttempt(job, AttemptSummary{3, At(200), At(260), "succeeded", {}});
  job.state = JobState::kSucceeded;
  job.finished_at = At(260);
  EXPECT_EQ(AttemptRunTime(job, At(999)), std::chrono::seconds(60));
  EXPECT_EQ(TotalRunTime(job, At(999)), std::chrono::seconds(60 + 30 + 60));

  // Pending again after a failure: no current attempt, the earlier ones still count.
  job.state = JobState::kPending;
  EXPECT_EQ(AttemptRunTime(job, At(999)), Duration{});
  EXPECT_EQ(TotalRunTime(job, At(999)), std::chrono::seconds(150));
}

TEST(JobRunTime, AttemptsDroppedFromTheHistoryStillCount) {
  Job job = TwoGpuJob();
  job.dropped_service = std::chrono::seconds(2 * 40);  // GPU time: 40 s on 2 GPUs
  RecordAttempt(job, AttemptSummary{101, At(0), At(10), "preempted", {}});
  job.state = JobState::kFailed;
  EXPECT_EQ(TotalRunTime(job, At(50)), std::chrono::seconds(50));
}

}  // namespace
}  // namespace cohort
