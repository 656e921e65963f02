#include "sweep/searcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "sweep/hparam_space.h"
#include "sweep/random_stream.h"
#include "sweep/sweep_test_fixture.h"

namespace cohort::sweep {
namespace {

using ::testing::ElementsAre;

std::unique_ptr<Searcher> Make(const SweepSpec& spec, const Json* state = nullptr) {
  auto searcher = MakeSearcher(spec, state);
  EXPECT_TRUE(searcher.ok()) << searcher.status().message();
  return searcher.ok() ? std::move(*searcher) : nullptr;
}

std::vector<Json> All(Searcher* searcher) {
  std::vector<Json> trials;
  while (auto next = searcher->NextTrial()) trials.push_back(std::move(*next));
  return trials;
}

constexpr std::string_view kGrid = R"(
name: g
trial: {tasks: [{role: w, command: [run]}]}
hyperparameters:
  b: {type: categorical, vals: [x, y]}
  a: {type: int, minval: 1, maxval: 3, count: 3}
  c: {d: 5}
searcher: {name: grid, metric: loss}
)";

TEST(GridSearcherTest, EveryPointOnceFirstNameOutermost) {
  SweepSpec spec = ParseOrDie(kGrid);
  auto grid = Make(spec);
  std::vector<Json> trials = All(grid.get());
  ASSERT_EQ(trials.size(), 6u);
  EXPECT_EQ(static_cast<int64_t>(trials.size()), GridSize(spec));
  std::vector<std::string> seen;
  for (size_t i = 0; i < trials.size(); ++i) {
    const Json& t = trials[i];
    EXPECT_TRUE(TrialSpec(spec, static_cast<int>(i) + 1, t).ok()) << t;
    EXPECT_EQ(t.at("c").at("d"), 5);
    seen.push_back(t.at("a").dump() + t.at("b").get<std::string>());
  }
  EXPECT_THAT(seen, ElementsAre("1x", "1y", "2x", "2y", "3x", "3y"));
  EXPECT_EQ(grid->trials_made(), 6);
  EXPECT_FALSE(grid->NextTrial());
  EXPECT_EQ(grid->Observe(1, 100, 0.5), Verdict::kContinue);
}

TEST(GridSearcherTest, RestoredCarriesOn) {
  SweepSpec spec = ParseOrDie(kGrid);
  std::vector<Json> all = All(Make(spec).get());
  for (int made = 0; made <= 6; ++made) {
    auto a = Make(spec);
    for (int i = 0; i < made; ++i) a->NextTrial();
    Json state = Json::parse(a->State().dump());
    auto b = Make(spec, &state);
    std::vector<Json> rest = All(b.get());
    EXPECT_EQ(rest, std::vector<Json>(all.begin() + made, all.end()));
  }
  Json wrong = {{"searcher", "random"}, {"trials_made", 0}};
  EXPECT_EQ(MakeSearcher(spec, &wrong).status().message(),
            "searcher state: is not a grid searcher's");
  Json too_many = {{"searcher", "grid"}, {"trials_made", 7}};
  EXPECT_FALSE(MakeSearcher(spec, &too_many).ok());
}

SweepSpec RandomSpec(uint64_t seed) {
  SweepSpec spec = ParseOrDie(Replace(Replace(kDigitsYaml, "name: asha", "name: random"),
                                      "  time_metric: epoch\n  max_time: 27\n  divisor: 3\n  "
                                      "max_rungs: 4\n",
                                      ""));
  spec.searcher.seed = seed;
  return spec;
}

TEST(RandomSearcherTest, SameSeedSameTrialsOtherSeedOthers) {
  SweepSpec spec = RandomSpec(7);
  std::vector<Json> a = All(Make(spec).get());
  ASSERT_EQ(a.size(), 16u);
  EXPECT_EQ(All(Make(spec).get()), a);
  EXPECT_NE(All(Make(RandomSpec(8)).get()), a);
  std::set<std::string> distinct;
  for (const Json& t : a) {
    distinct.insert(t.dump());
    for (const HyperParameter& hp : spec.hyperparameters) {
      const Json* v = FindDotted(t, hp.name);
      ASSERT_NE(v, nullptr) << hp.name;
      EXPECT_FALSE(ValueProblem(hp, *v)) << hp.name << " " << *v;
    }
    EXPECT_TRUE(TrialSpec(spec, 1, t).ok());
  }
  EXPECT_EQ(distinct.size(), 16u);
}

TEST(RandomSearcherTest, TheStreamIsTheEnginesOwnOutput) {
  // Pinned: a library whose std::mt19937_64 or our transforms changed would fail here.
  SweepSpec spec = RandomSpec(7);
  Json first = *Make(spec)->NextTrial();
  RandomStream stream(7);
  Json want = Json::object();
  for (const HyperParameter& hp : spec.hyperparameters)
    SetDotted(&want, hp.name, Draw(hp, &stream));
  EXPECT_EQ(first, want);
  std::mt19937_64 engine(7);
  RandomStream again(7);
  EXPECT_EQ(again.Next(), engine());
  EXPECT_EQ(again.Uniform(), static_cast<double>(engine() >> 11) * 0x1.0p-53);
  EXPECT_EQ(again.draws(), 2u);
}

TEST(RandomSearcherTest, RestoredCarriesOnTheStream) {
  SweepSpec spec = RandomSpec(99);
  std::vector<Json> all = All(Make(spec).get());
  for (int made = 0; made <= 16; ++made) {
    auto a = Make(spec);
    for (int i = 0; i < made; ++i) a->NextTrial();
    Json state = Json::parse(a->State().dump());
    auto b = Make(spec, &state);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->trials_made(), made);
    EXPECT_EQ(All(b.get()), std::vector<Json>(all.begin() + made, all.end())) << made;
  }
  Json state = Make(spec)->State();
  state["seed"] = 100;
  EXPECT_EQ(MakeSearcher(spec, &state).status().message(),
            "searcher state: seed must be the spec's, 99");
  state = Make(spec)->State();
  state["draws"] = uint64_t{1} << 40;
  EXPECT_FALSE(MakeSearcher(spec, &state).ok());
}

TEST(SearcherTest, PreviewTrials) {
  SweepSpec grid = ParseOrDie(kGrid);
  EXPECT_EQ(PreviewTrials(grid, 100), All(Make(grid).get()));
  SweepSpec random = RandomSpec(5);
  std::vector<Json> first3 = PreviewTrials(random, 3);
  ASSERT_EQ(first3.size(), 3u);
  std::vector<Json> all = All(Make(random).get());
  EXPECT_EQ(first3, std::vector<Json>(all.begin(), all.begin() + 3));
  EXPECT_EQ(PreviewTrials(random, 0).size(), 0u);
}

TEST(SearcherTest, AshaDrawsTheRandomSearchersValues) {
  SweepSpec asha = ParseOrDie(kDigitsYaml);
  SweepSpec random = RandomSpec(asha.searcher.seed);
  EXPECT_EQ(All(Make(asha).get()), All(Make(random).get()));
}

TEST(SearcherTest, RungTimes) {
  SearcherSpec s;
  s.max_time = 27;
  s.divisor = 3;
  s.max_rungs = 4;
  EXPECT_THAT(RungTimes(s), ElementsAre(1, 3, 9, 27));
  s.max_time = 100;
  s.divisor = 4;
  s.max_rungs = 5;
  EXPECT_THAT(RungTimes(s), ElementsAre(100.0 / 256, 100.0 / 64, 100.0 / 16, 25, 100));
  s.max_rungs = 1;
  EXPECT_THAT(RungTimes(s), ElementsAre(100));
}

}  // namespace
}  // namespace cohort::sweep
