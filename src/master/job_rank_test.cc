#include "master/job_rank.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cohort::master {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(FormatGpuTime, HoursMinutesOrSecondsWithAtMostOneDecimal) {
  EXPECT_EQ(FormatGpuTime(hours(30)), "30 GPU-hours");
  EXPECT_EQ(FormatGpuTime(hours(4) + minutes(12)), "4.2 GPU-hours");
  EXPECT_EQ(FormatGpuTime(hours(1)), "1 GPU-hour");
  EXPECT_EQ(FormatGpuTime(hours(12) + minutes(20)), "12 GPU-hours");
  EXPECT_EQ(FormatGpuTime(minutes(12)), "12 GPU-minutes");
  EXPECT_EQ(FormatGpuTime(std::chrono::milliseconds(400)), "0.4 GPU-seconds");
  EXPECT_EQ(FormatGpuTime(Duration::zero()), "0 GPU-seconds");
}

PendingJob Waiting(Duration attained, std::optional<RuntimeEstimate> estimate) {
  PendingJob job;
  job.job_id = 1;
  job.tasks = {TaskRequest{"worker", 0, Resources{8, 1000, 1 << 30}}};
  job.submitted_at = FromMicros(0);
  job.waiting_since = FromMicros(0);
  job.attained = attained;
  job.estimate = std::move(estimate);
  return job;
}

TEST(DescribeRank, AJobThatOutranItsEstimateExpectsAsMuchAgain) {
  scheduler::SchedulerConfig config;
  RuntimeEstimate e{hours(30), 12, "of team vision with 8 GPUs", 3};
  Timestamp now = FromMicros(0) + minutes(5);
  auto rank = RankOfJob(config, Waiting(hours(40), e), now);
  ASSERT_TRUE(rank.has_value());
  EXPECT_EQ(rank->level, 2);
  EXPECT_EQ(rank->levels, 3);
  EXPECT_THAT(DescribeRank(*rank, config, now),
              ::testing::ElementsAre(
                  // It ran 5 hours on 8 GPUs: promoted after waiting twice that.
                  "not promoted: waited 5m; promoted once it has waited 10h",
                  "level 2 of 0-2 (16 GPU-hours and more): 40 GPU-hours attained; estimated 30 "
                  "GPU-hours from 12 finished jobs of team vision with 8 GPUs, it has outrun "
                  "that, so as much again is expected (40 GPU-hours)"));
  rank = RankOfJob(config, Waiting(hours(4) + minutes(12), e), now);
  EXPECT_THAT(DescribeRank(*rank, config, now).back(),
              ::testing::EndsWith("4.2 GPU-hours attained; estimated 30 GPU-hours from 12 "
                                  "finished jobs of team vision with 8 GPUs, about 26 GPU-hours "
                                  "left"));
  config.policy = scheduler::Policy::kFifo;
  EXPECT_EQ(RankOfJob(config, Waiting(hours(1), e), now), std::nullopt);
}

}  // namespace
}  // namespace cohort::master
