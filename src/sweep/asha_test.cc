// ASHA driven by scripted metrics in a scripted interleaving, against a case worked by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sweep/searcher.h"
#include "sweep/sweep_test_fixture.h"

namespace cohort::sweep {
namespace {

// divisor 2, 3 rungs, max_time 4: rungs at times 1, 2 and 4.
SweepSpec AshaSpec(MetricMode mode) {
  SweepSpec spec = ParseOrDie(R"(
name: a
trial: {tasks: [{role: w, command: [run, "${hp.lr}"]}]}
hyperparameters: {lr: {type: double, minval: 0, maxval: 1}}
searcher: {name: asha, metric: acc, max_trials: 6, max_time: 4, divisor: 2, max_rungs: 3,
           seed: 11}
)");
  spec.searcher.mode = mode;
  return spec;
}

struct Step {
  enum Kind { kNext, kObserve, kEnded } kind;
  int trial = 0;
  double time = 0;
  double value = 0;
  Verdict want = Verdict::kContinue;
};

Step Next() { return {Step::kNext, 0, 0, 0, Verdict::kContinue}; }
Step Point(int trial, double time, double value, Verdict want) {
  return {Step::kObserve, trial, time, value, want};
}
Step Ended(int trial) { return {Step::kEnded, trial, 0, 0, Verdict::kContinue}; }

constexpr Verdict kGo = Verdict::kContinue;
constexpr Verdict kStop = Verdict::kStop;
constexpr Verdict kDone = Verdict::kComplete;

// Worked by hand, mode max. k = max(1, floor(n / 2)); a value is promoted iff fewer than k
// values of its rung (its own counted in n) are strictly better.
std::vector<Step> HandWorked() {
  return {
      Next(), Next(), Next(), Point(1, 1, 0.5, kGo),  // rung 0 {.5}: n 1, k 1, rank 0
      Point(2, 1, 0.3, kStop),   // rung 0 {.5 .3}: n 2, k 1, rank 1 (.5 is better)
      Point(3, 1, 0.7, kGo),     // rung 0 {.5 .3 .7}: n 3, k 1, rank 0
      Point(2, 1, 0.99, kStop),  // a repeat after the verdict: the verdict again, nothing added
      Next(), Point(1, 2, 0.6, kGo),  // rung 1 {.6}: n 1, k 1, rank 0
      Point(4, 0.5, 0.9, kGo),        // below rung 0: nothing yet
      Point(4, 1, 0.6, kGo),          // rung 0 {.5 .3 .7 .6}: n 4, k 2, rank 1 (.7)
      Next(), Next(),
      Point(5, 1, 0.4, kStop),   // rung 0 {.5 .3 .7 .6 .4}: n 5, k 2, rank 3 (.5 .7 .6)
      Point(3, 2, 0.55, kStop),  // rung 1 {.6 .55}: n 2, k 1, rank 1: best at rung 0, not here
      Point(6, 3, 0.9, kGo),     // skips to rung 1 in one point: rung 0 {... .9}: n 6, k 3,
                                 // rank 0; rung 1 {.6 .55 .9}: n 3, k 1, rank 0
      Point(6, 2, 0.1, kGo),     // out of order (before time 3): decides nothing, adds nothing
      Point(4, 1.5, 0.2, kGo),   // between rungs: nothing
      Point(4, 2, 0.58, kStop),  // rung 1 {.6 .55 .9 .58}: n 4, k 2, rank 2 (.6 .9)
      Ended(2), Point(1, 4, 0.65, kDone),  // the top rung: complete
      Point(1, 5, 0.1, kDone),             // after: the verdict again
      Point(6, 9, 0.95, kDone),            // past the top in one point
      Point(7, 1, 0.5, kGo),               // never made: ignored
  };
}

// Runs `steps[from, to)` on `searcher`, checking each verdict.
void Play(Searcher* searcher, const std::vector<Step>& steps, size_t from, size_t to,
          double sign = 1) {
  for (size_t i = from; i < to; ++i) {
    const Step& s = steps[i];
    switch (s.kind) {
      case Step::kNext:
        EXPECT_TRUE(searcher->NextTrial().has_value()) << "step " << i;
        break;
      case Step::kObserve:
        EXPECT_EQ(searcher->Observe(s.trial, s.time, sign * s.value), s.want)
            << "step " << i << ": trial " << s.trial << " at " << s.time;
        break;
      case Step::kEnded:
        searcher->TrialEnded(s.trial);
        break;
    }
  }
}

std::unique_ptr<Searcher> Make(const SweepSpec& spec, const Json* state = nullptr) {
  auto searcher = MakeSearcher(spec, state);
  EXPECT_TRUE(searcher.ok()) << searcher.status().message();
  return searcher.ok() ? std::move(*searcher) : nullptr;
}

TEST(AshaTest, HandWorkedPromotionsAndStops) {
  SweepSpec spec = AshaSpec(MetricMode::kMax);
  auto asha = Make(spec);
  std::vector<Step> steps = HandWorked();
  Play(asha.get(), steps, 0, steps.size());
  Json state = asha->State();
  EXPECT_EQ(state.at("rungs"), Json::parse(R"([
      [[1, 0.5], [2, 0.3], [3, 0.7], [4, 0.6], [5, 0.4], [6, 0.9]],
      [[1, 0.6], [3, 0.55], [6, 0.9], [4, 0.58]],
      [[1, 0.65], [6, 0.95]]])"));
  EXPECT_EQ(asha->trials_made(), 6);
  EXPECT_FALSE(asha->NextTrial());  // max_trials made
}

TEST(AshaTest, ModeMinIsModeMaxOfTheNegatedValues) {
  SweepSpec spec = AshaSpec(MetricMode::kMin);
  auto asha = Make(spec);
  std::vector<Step> steps = HandWorked();
  Play(asha.get(), steps, 0, steps.size(), -1);
  // And the same values under min give other verdicts: .3 is then the best of rung 0.
  auto plain = Make(spec);
  Play(plain.get(), steps, 0, 4);
  plain->NextTrial();
  EXPECT_EQ(plain->Observe(2, 1, 0.3), Verdict::kContinue);
}

TEST(AshaTest, RestoredAtEveryStepGivesTheSameVerdicts) {
  SweepSpec spec = AshaSpec(MetricMode::kMax);
  std::vector<Step> steps = HandWorked();
  auto whole = Make(spec);
  Play(whole.get(), steps, 0, steps.size());
  for (size_t cut = 0; cut <= steps.size(); ++cut) {
    SCOPED_TRACE(cut);
    auto first = Make(spec);
    Play(first.get(), steps, 0, cut);
    Json state = Json::parse(first->State().dump());
    auto second = Make(spec, &state);
    ASSERT_NE(second, nullptr);
    Play(second.get(), steps, cut, steps.size());
    EXPECT_EQ(second->State(), whole->State());
  }
}

TEST(AshaTest, NanIsWorstAndNonFiniteValuesSurviveTheState) {
  SweepSpec spec = AshaSpec(MetricMode::kMax);
  auto asha = Make(spec);
  for (int i = 0; i < 4; ++i) asha->NextTrial();
  EXPECT_EQ(asha->Observe(1, 1, NAN), Verdict::kContinue);        // alone in its rung
  EXPECT_EQ(asha->Observe(2, 1, -INFINITY), Verdict::kContinue);  // better than NaN
  EXPECT_EQ(asha->Observe(3, 1, NAN), Verdict::kStop);
  EXPECT_EQ(asha->Observe(4, NAN, 1), Verdict::kContinue);  // no time: decides nothing
  Json state = Json::parse(asha->State().dump());
  EXPECT_EQ(state.at("rungs")[0], Json::parse(R"([[1, "nan"], [2, "-inf"], [3, "nan"]])"));
  auto restored = Make(spec, &state);
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(restored->State(), state);
  EXPECT_EQ(restored->Observe(4, 1, INFINITY), Verdict::kContinue);
}

TEST(AshaTest, OneRungIsRunToTheEnd) {
  SweepSpec spec = AshaSpec(MetricMode::kMax);
  spec.searcher.max_rungs = 1;
  auto asha = Make(spec);
  asha->NextTrial();
  asha->NextTrial();
  EXPECT_EQ(asha->Observe(1, 3.9, 0.9), Verdict::kContinue);
  EXPECT_EQ(asha->Observe(2, 3.9, 0.1), Verdict::kContinue);
  EXPECT_EQ(asha->Observe(2, 4, 0.1), Verdict::kComplete);
}

TEST(AshaTest, BrokenStatesAreRefused) {
  SweepSpec spec = AshaSpec(MetricMode::kMax);
  auto asha = Make(spec);
  asha->NextTrial();
  asha->Observe(1, 1, 0.5);
  Json good = asha->State();
  Json bad = good;
  bad["rungs"] = Json::array();
  EXPECT_EQ(MakeSearcher(spec, &bad).status().message(),
            "searcher state: rungs must be a list of 3");
  bad = good;
  bad["rungs"][0][0][0] = 2;
  EXPECT_EQ(MakeSearcher(spec, &bad).status().message(), "searcher state: trial 2 was not made");
  bad = good;
  bad["trials"][0]["verdict"] = "maybe";
  EXPECT_FALSE(MakeSearcher(spec, &bad).ok());
  bad = good;
  bad.erase("trials");
  auto missing = MakeSearcher(spec, &bad);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), ::testing::StartsWith("searcher state: "));
  EXPECT_THAT(missing.status().message(), ::testing::Not(::testing::HasSubstr("json.exception")));
  bad = good;
  bad["searcher"] = "grid";
  EXPECT_FALSE(MakeSearcher(spec, &bad).ok());
}

}  // namespace
}  // namespace cohort::sweep
