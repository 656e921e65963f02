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

// Reads as a Python loader of 4 KiB files makes them (two calls a file: its bytes, then the
// end), and as cohort_shards.py makes them (1 MiB reads): bench/data_pack_bench.py measured both.
constexpr JobSample::Reads kSmallFiles{24'000 * 2048.0, 24'000, 1};
constexpr JobSample::Reads kShards{1'800 * 900.0 * 1024, 1'800, 1};
constexpr char kSmallReadsText[] =
    "GPU 12% busy while its tasks read 2.0 KiB per read call (24,000 calls/s): pack the small "
    "input files into large shards with `cohort data pack` and read them with "
    "python/cohort_shards.py (docs/data.md)";

TEST(Advisor, AJobWhoseGpusWaitWhileItReadsManySmallFilesIsToldToPackThem) {
  // Its loader waits on the files, so its CPUs are not saturated: only the reads say why.
  auto samples = Every10s(minutes(3), [](Timestamp t) {
    return JobSample{t, {0.10, 0.14}, 1.0, 4.0, kSmallFiles};
  });
  auto advice = Advise(samples, kStart + minutes(3));
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_EQ(advice[0].kind, AdviceKind::kSmallReads);
  EXPECT_EQ(advice[0].text, kSmallReadsText);
  EXPECT_EQ(advice[0].since, kStart);
  // With its CPUs saturated too, the reads say more than the CPUs.
  samples = Every10s(minutes(3), [](Timestamp t) {
    return JobSample{t, {0.10, 0.14}, 4.0, 4.0, kSmallFiles};
  });
  advice = Advise(samples, kStart + minutes(3));
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_EQ(advice[0].text, kSmallReadsText);
  // Not before the window.
  EXPECT_TRUE(Advise(samples, kStart + minutes(1)).empty());
}

TEST(Advisor, LargeReadsFewReadsBusyGpusOrNoFiguresAreNoSmallReads) {
  auto advise = [](double busy, std::optional<JobSample::Reads> reads, double cpus = 1.0) {
    return Advise(Every10s(minutes(3),
                           [&](Timestamp t) {
                             return JobSample{t, {busy}, cpus, 4.0, reads};
                           }),
                  kStart + minutes(3));
  };
  ASSERT_EQ(advise(0.1, kSmallFiles).size(), 1u);
  EXPECT_TRUE(advise(0.1, kShards).empty()) << "shards are read in large calls";
  EXPECT_TRUE(advise(0.1, JobSample::Reads{500 * 2048.0, 500, 1}).empty())
      << "a few hundred small reads a second are not a loader of small files";
  EXPECT_TRUE(advise(0.1, JobSample::Reads{4'000 * 2048.0, 4'000, 8}).empty())
      << "500 calls/s per task, over 8 tasks";
  EXPECT_EQ(advise(0.1, JobSample::Reads{16'000 * 2048.0, 16'000, 8}).size(), 1u);
  EXPECT_TRUE(advise(0.9, kSmallFiles).empty()) << "busy GPUs are fed well enough";
  EXPECT_TRUE(advise(0.1, std::nullopt).empty()) << "no figures, no finding";
  EXPECT_TRUE(advise(0.1, JobSample::Reads{0, 0, 1}).empty());
  // Without figures, saturated CPUs still get the advice they got before.
  auto starved = advise(0.1, std::nullopt, 4.0);
  ASSERT_EQ(starved.size(), 1u);
  EXPECT_EQ(starved[0].kind, AdviceKind::kStarved);
  // A stretch of small reads that ended (the job moved to shards) is not advice any more.
  auto moved = Every10s(minutes(5), [](Timestamp t) {
    return JobSample{t, {0.1}, 1.0, 4.0, t < kStart + minutes(4) ? kSmallFiles : kShards};
  });
  EXPECT_TRUE(Advise(moved, kStart + minutes(5)).empty());
  // Idle GPUs say more still.
  auto idle = Every10s(minutes(31), [](Timestamp t) {
    return JobSample{t, {0.0}, 1.0, 4.0, kSmallFiles};
  });
  auto advice = Advise(idle, kStart + minutes(31));
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_EQ(advice[0].kind, AdviceKind::kIdle);
}

TEST(Advisor, SmallReadsAreMeanBytesOverTheStretch) {
  // Half the time 1 KiB reads, half 8 KiB ones at the same rate: 4.5 KiB per call on average.
  auto samples = Every10s(seconds(190), [](Timestamp t) {  // 20 samples
    bool odd = ((t - kStart) / seconds(10)) % 2;
    return JobSample{
        t, {0.2}, 1.0, 4.0, JobSample::Reads{2'000 * (odd ? 8192.0 : 1024.0), 2'000, 1}};
  });
  auto advice = Advise(samples, kStart + seconds(190));
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_NE(advice[0].text.find("read 4.5 KiB per read call (2,000 calls/s)"), std::string::npos)
      << advice[0].text;
  auto tiny = Every10s(minutes(3), [](Timestamp t) {
    return JobSample{t, {0.2}, 1.0, 4.0, JobSample::Reads{2'000 * 100.0, 2'000, 1}};
  });
  EXPECT_NE(Advise(tiny, kStart + minutes(3))[0].text.find("read 100 bytes per read call"),
            std::string::npos);
}

}  // namespace
}  // namespace cohort::master
