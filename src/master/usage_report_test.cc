// The usage report's arithmetic on holds and milestones given by hand: period boundaries, clipping
// and bounds.
#include "master/usage_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/units.h"

namespace cohort::master {
namespace {

Timestamp At(const char* text) { return *ParseTimeSpec(text, Timestamp{}); }

state::TaskUsage Hold(const char* start, std::optional<const char*> end, int64_t gpus,
                      std::string user = "ada") {
  state::TaskUsage u{7,    1,   "worker/0", "vision",    std::move(user),
                     gpus, 500, At(start),  std::nullopt};
  if (end) u.end = At(*end);
  return u;
}

UsageReport Report(UsageQuery query, Timestamp now, const std::vector<state::TaskUsage>& holds,
                   const std::vector<state::JobMilestone>& milestones = {}) {
  auto sums = UsageAccumulator::Create(query, now);
  EXPECT_TRUE(sums.ok()) << sums.status().ToString();
  for (const auto& h : holds) sums->AddHold(h);
  for (const auto& m : milestones) sums->AddMilestone(m);
  auto report = std::move(*sums).Finish();
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return report.ok() ? *report : UsageReport{};
}

TEST(PeriodStart, DaysAndWeeksFromMondayInUtc) {
  EXPECT_EQ(PeriodStart(UsagePeriod::kDay, At("2026-11-04T23:59:59.999999Z")), At("2026-11-04"));
  EXPECT_EQ(PeriodStart(UsagePeriod::kDay, At("2026-11-04")), At("2026-11-04"));
  EXPECT_EQ(PeriodStart(UsagePeriod::kWeek, At("2026-11-04T12:00:00Z")), At("2026-11-02"));
  EXPECT_EQ(PeriodStart(UsagePeriod::kWeek, At("2026-11-08T23:00:00Z")), At("2026-11-02"));
  EXPECT_EQ(PeriodStart(UsagePeriod::kWeek, At("2026-11-09")), At("2026-11-09"));
  // The epoch was a Thursday: its week began on Monday 1969-12-29.
  EXPECT_EQ(PeriodStart(UsagePeriod::kWeek, At("1970-01-02")), FromMicros(-3 * 86'400'000'000LL));
}

TEST(UsageReport, AHoldOverSeveralDaysIsSplitExactlyAndClipped) {
  // 3 GPUs from 2026-11-01 18:00 to 2026-11-04 06:00; the report starts at 11-02 12:00.
  UsageQuery query{At("2026-11-02T12:00:00Z"), At("2026-11-05"), "", "", UsagePeriod::kDay};
  UsageReport r =
      Report(query, At("2026-11-10"), {Hold("2026-11-01T18:00:00Z", "2026-11-04T06:00:00Z", 3)});
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].start, At("2026-11-02T12:00:00Z"));  // the day's part within the range
  EXPECT_EQ(r.rows[0].end, At("2026-11-03"));
  EXPECT_DOUBLE_EQ(r.rows[0].gpu_hours, 36.0);
  EXPECT_DOUBLE_EQ(r.rows[1].gpu_hours, 72.0);
  EXPECT_DOUBLE_EQ(r.rows[2].gpu_hours, 18.0);
  EXPECT_DOUBLE_EQ(r.rows[2].cpu_hours, 3.0);  // half a CPU for 6 hours
  EXPECT_DOUBLE_EQ(r.total.gpu_hours, 126.0);
  EXPECT_EQ(r.total.start, query.since);
  EXPECT_EQ(r.total.end, query.until);
}

TEST(UsageReport, AnOpenHoldRunsUntilNowAndNoFurther) {
  UsageQuery query{At("2026-11-02"), At("2026-11-04"), "", "", UsagePeriod::kDay};
  UsageReport r = Report(query, At("2026-11-03T06:00:00Z"), {Hold("2026-11-02T20:00:00Z", {}, 1)});
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(r.rows[0].gpu_hours, 4.0);
  EXPECT_DOUBLE_EQ(r.rows[1].gpu_hours, 6.0);
  // A report of the past only: now is after it.
  UsageReport past =
      Report(UsageQuery{At("2026-11-02"), At("2026-11-02T21:00:00Z"), "", "", UsagePeriod::kTotal},
             At("2026-11-03"), {Hold("2026-11-02T20:00:00Z", {}, 1)});
  EXPECT_DOUBLE_EQ(past.total.gpu_hours, 1.0);
}

TEST(UsageReport, MilestonesCountInTheirPeriod) {
  using Kind = state::JobMilestone::Kind;
  auto m = [](Kind kind, const char* at, int attempt = 0, JobState state = JobState::kPending) {
    return state::JobMilestone{kind,   7,       "vision", "ada",
                               At(at), attempt, state,    At("2026-11-02T23:00:00Z")};
  };
  UsageQuery query{At("2026-11-02"), At("2026-11-04"), "", "", UsagePeriod::kDay};
  UsageReport r = Report(query, At("2026-11-05"), {},
                         {m(Kind::kSubmitted, "2026-11-02T23:00:00Z"),
                          m(Kind::kAttemptStarted, "2026-11-03T01:00:00Z", 1),
                          m(Kind::kAttemptStarted, "2026-11-03T02:00:00Z", 2),
                          m(Kind::kFinished, "2026-11-03T03:00:00Z", 0, JobState::kKilled),
                          m(Kind::kSubmitted, "2026-11-04T00:00:00Z")});  // past `until`
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].jobs_submitted, 1);
  EXPECT_EQ(r.rows[0].attempts, 0);
  EXPECT_EQ(r.rows[1].attempts, 2);
  EXPECT_EQ(r.rows[1].jobs_started, 1);
  EXPECT_EQ(r.rows[1].queue_delay_max, std::chrono::hours(2));
  EXPECT_EQ(r.rows[1].jobs_killed, 1);
  EXPECT_EQ(r.total.jobs_submitted, 1);
}

TEST(UsageReport, TooManyRowsIsAnErrorNotAnUnboundedAnswer) {
  auto sums = UsageAccumulator::Create(
      UsageQuery{At("2026-11-02"), At("2026-11-03"), "", "", UsagePeriod::kTotal},
      At("2026-11-03"));
  ASSERT_TRUE(sums.ok());
  for (size_t i = 0; i <= kMaxUsageRows; ++i) {
    sums->AddHold(Hold("2026-11-02T01:00:00Z", "2026-11-02T02:00:00Z", 1, std::to_string(i)));
  }
  auto report = std::move(*sums).Finish();
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(report.status().message(), ::testing::HasSubstr("more than 10000 rows"));
}

}  // namespace
}  // namespace cohort::master
