#include "scheduler/policy_tuning.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cohort::scheduler {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PolicyTuning, EmptyFieldsLeaveTheConfigAlone) {
  SchedulerConfig config;
  ASSERT_TRUE(ApplyTuning({}, config).ok());
  EXPECT_THAT(config.las_thresholds, ElementsAre(hours(1), hours(16)));
  EXPECT_EQ(config.min_victim_level, 2);
  EXPECT_EQ(config.level_preemption_delay, minutes(30));
  EXPECT_EQ(config.move_after, minutes(1));
}

TEST(PolicyTuning, SetsWhatIsGiven) {
  SchedulerConfig config;
  PolicyTuning t;
  t.levels = "30m,4h,32h";
  t.promote_after = "90m";
  t.promote_factor = "1.5";
  t.max_wait = "12h";
  t.protected_quantum = "20m";
  t.min_victim_level = "1";
  t.level_preemption_delay = "0s";
  ASSERT_TRUE(ApplyTuning(t, config).ok());
  EXPECT_THAT(config.las_thresholds, ElementsAre(minutes(30), hours(4), hours(32)));
  EXPECT_EQ(config.promote_after, minutes(90));
  EXPECT_EQ(config.promote_factor, 1.5);
  EXPECT_EQ(config.max_wait, hours(12));
  EXPECT_EQ(config.protected_quantum, minutes(20));
  EXPECT_EQ(config.min_victim_level, 1);
  EXPECT_EQ(config.level_preemption_delay, Duration{}) << "0: preempt at once";
  t = {};
  t.move_after = "2m";
  ASSERT_TRUE(ApplyTuning(t, config).ok());
  EXPECT_EQ(config.move_after, minutes(2));
  t.move_after = "off";
  ASSERT_TRUE(ApplyTuning(t, config).ok());
  EXPECT_FALSE(config.move_after.has_value()) << "off: never moves";
  t = {};
  t.levels = "none";
  ASSERT_TRUE(ApplyTuning(t, config).ok());
  EXPECT_TRUE(config.las_thresholds.empty());
}

TEST(PolicyTuning, BadValuesNameTheFlag) {
  auto error = [](std::string PolicyTuning::*field, const std::string& value) {
    PolicyTuning t;
    t.*field = value;
    SchedulerConfig config;
    return ApplyTuning(t, config).message();
  };
  EXPECT_THAT(error(&PolicyTuning::levels, "16h,1h"), HasSubstr("--levels: thresholds must grow"));
  EXPECT_THAT(error(&PolicyTuning::levels, "1h,"), HasSubstr("--levels"));
  EXPECT_THAT(error(&PolicyTuning::levels, "0s"), HasSubstr("must be longer than 0"));
  EXPECT_THAT(error(&PolicyTuning::promote_after, "soon"), HasSubstr("--promote-after"));
  EXPECT_THAT(error(&PolicyTuning::promote_factor, "-1"), HasSubstr("--promote-factor"));
  EXPECT_THAT(error(&PolicyTuning::promote_factor, "nan"), HasSubstr("--promote-factor"));
  EXPECT_THAT(error(&PolicyTuning::max_wait, "1x"), HasSubstr("--max-wait"));
  EXPECT_THAT(error(&PolicyTuning::protected_quantum, "-5m"), HasSubstr("--protected-quantum"));
  EXPECT_THAT(error(&PolicyTuning::move_after, "-1m"), HasSubstr("--move-after"));
  EXPECT_THAT(error(&PolicyTuning::move_after, "never"), HasSubstr("--move-after"));
  EXPECT_THAT(error(&PolicyTuning::min_victim_level, "two"), HasSubstr("--min-victim-level"));
  EXPECT_THAT(error(&PolicyTuning::level_preemption_delay, "-1m"),
              HasSubstr("--level-preemption-delay: \"-1m\" is not a duration"));
}

// A policy's name means one thing in `cohortd master` and `cohort sim run`: both call ConfigFor.
TEST(ConfigFor, FifoIsStrictOrderAndEveryOtherPolicyBackfills) {
  auto fifo = ConfigFor("fifo");
  ASSERT_TRUE(fifo.ok()) << fifo.status().ToString();
  EXPECT_EQ(fifo->policy, Policy::kFifo);
  EXPECT_FALSE(fifo->backfill) << "fifo is the classic strict baseline";
  for (std::string_view name : {"default", "las", "sjf-oracle", "srtf-oracle"}) {
    auto config = ConfigFor(name);
    ASSERT_TRUE(config.ok()) << name;
    EXPECT_TRUE(config->backfill) << name;
    EXPECT_EQ(PolicyName(config->policy), name);
  }
}

TEST(ConfigFor, ASuffixSaysWhetherToBackfill) {
  auto fifo = ConfigFor("fifo+backfill");
  ASSERT_TRUE(fifo.ok());
  EXPECT_EQ(fifo->policy, Policy::kFifo);
  EXPECT_TRUE(fifo->backfill);
  auto las = ConfigFor("las-backfill");
  ASSERT_TRUE(las.ok());
  EXPECT_EQ(las->policy, Policy::kLeastAttainedService);
  EXPECT_FALSE(las->backfill);
}

TEST(ConfigFor, LeavesTheRestAtTheDefaults) {
  auto config = ConfigFor("default");
  ASSERT_TRUE(config.ok());
  SchedulerConfig defaults;
  EXPECT_EQ(config->reservations, defaults.reservations);
  EXPECT_EQ(config->move_after, defaults.move_after);
  EXPECT_EQ(config->las_thresholds, defaults.las_thresholds);
}

TEST(ConfigFor, AnUnknownNameListsTheNames) {
  for (std::string_view name : {"", "+backfill", "sjf", "fifo+backfill+backfill", "FIFO"}) {
    auto config = ConfigFor(name);
    ASSERT_FALSE(config.ok()) << name;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(config.status().message(), HasSubstr("fifo+backfill, las, default")) << name;
  }
}

}  // namespace
}  // namespace cohort::scheduler
