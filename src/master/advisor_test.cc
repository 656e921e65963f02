#include "master/advisor.h"

#include <gtest/gtest.h>

namespace cohort::master {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

const Timestamp kStart = FromMicros(1'700'000'000'000'000);

// Samples every 10 s for `length`, each made by `at`.
std::vector<JobSample> Every10s(Duration length, std::function<JobSample(Timestamp)> at) {
  std::vector<JobSample> samples;
  for (Timestamp t = kStart; t <= kStart + length; t += seconds(10)) samples.push_back(at(t));
  return samples;
}

TEST(Advisor, SmallCpuRequestsNeverReadAsZero) {
  auto samples = Every10s(minutes(3), [](Timestamp t) { return JobSample{t, {0.08}, 0.1, 0.1}; });
  auto advice = Advise(samples, kStart + minutes(3));
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_EQ(advice[0].text,
            "GPU 8% busy while 0.1 of 0.1 CPUs are saturated: ask for more CPUs, or pack small "
            "input files into large shards");
  samples = Every10s(minutes(3), [](Timestamp t) { return JobSample{t, {0.08}, 0.05, 0.05}; });
  EXPECT_NE(Advise(samples, kStart + minutes(3))[0].text.find("50m of 50m"), std::string::npos);
}

TEST(Advisor, AJobWhoseGpusWaitWhileItsCpusAreSaturatedIsToldWhatToDo) {
  auto samples = Every10s(minutes(3), [](Timestamp t) {
    return JobSample{t, {0.10, 0.14}, 3.9, 4.0};
  });
  auto advice = Advise(samples, kStart + minutes(3));
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_EQ(advice[0].kind, AdviceKind::kStarved);
  EXPECT_EQ(advice[0].text,
            "GPU 12% busy while 4 of 4 CPUs are saturated: ask for more CPUs, or pack small "
            "input files into large shards");
  EXPECT_EQ(advice[0].since, kStart);
}

TEST(Advisor, NothingIsSaidBeforeTheWindowOrWhenEitherSideIsFine) {
  auto starved = [](Timestamp t) { return JobSample{t, {0.1}, 4, 4}; };
  EXPECT_TRUE(Advise(Every10s(minutes(1), starved), kStart + minutes(1)).empty())
      << "a minute is not yet the 2-minute window";
  auto busy_gpu = [](Timestamp t) { return JobSample{t, {0.95}, 4, 4}; };
  EXPECT_TRUE(Advise(Every10s(minutes(5), busy_gpu), kStart + minutes(5)).empty());
  auto idle_cpus = [](Timestamp t) { return JobSample{t, {0.2}, 1, 4}; };
  EXPECT_TRUE(Advise(Every10s(minutes(5), idle_cpus), kStart + minutes(5)).empty())
      << "slow GPUs with CPUs to spare are not an input problem";
  // A starved stretch that ended is not advice any more.
  auto ended = [](Timestamp t) {
    return t < kStart + minutes(4) ? JobSample{t, {0.1}, 4, 4} : JobSample{t, {0.9}, 4, 4};
  };
  EXPECT_TRUE(Advise(Every10s(minutes(5), ended), kStart + minutes(5)).empty());
}

TEST(Advisor, GpusUnusedForTheIdleTimeAreFlaggedIdle) {
  auto idle = [](Timestamp t) { return JobSample{t, {0, 0, 0, 0}, 0.1, 8}; };
  EXPECT_TRUE(Advise(Every10s(minutes(29), idle), kStart + minutes(29)).empty());
  auto advice = Advise(Every10s(minutes(31), idle), kStart + minutes(31));
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_EQ(advice[0].kind, AdviceKind::kIdle);
  EXPECT_EQ(advice[0].text, "its 4 GPUs have been idle for 31m");
  // One busy moment restarts the count.
  auto blip = [](Timestamp t) {
    return JobSample{t, {t == kStart + minutes(20) ? 0.5 : 0.0}, 0.1, 8};
  };
  EXPECT_TRUE(Advise(Every10s(minutes(31), blip), kStart + minutes(31)).empty());
  AdvisorConfig quick;
  quick.idle_after = minutes(5);
  EXPECT_EQ(Advise(Every10s(minutes(31), blip), kStart + minutes(31), quick).size(), 1u);
}

TEST(Advisor, GpusWhoseUseIsUnknownGetNoAdvice) {
  // Declared GPUs report no utilisation: silence, not "idle".
  auto unknown = [](Timestamp t) { return JobSample{t, {}, 4, 4}; };
  EXPECT_TRUE(Advise(Every10s(minutes(60), unknown), kStart + minutes(60)).empty());
}

}  // namespace
}  // namespace cohort::master
