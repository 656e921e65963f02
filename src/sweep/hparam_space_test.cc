#include "sweep/hparam_space.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "sweep/sweep_test_fixture.h"

namespace cohort::sweep {
namespace {

using ::testing::ElementsAre;

HyperParameter Range(HParamType type, double lo, double hi, std::optional<int> count) {
  HyperParameter hp;
  hp.name = "x";
  hp.type = type;
  hp.minval = lo;
  hp.maxval = hi;
  hp.count = count;
  return hp;
}

TEST(HParamSpaceTest, GridAxesAreEvenlySpacedWithBothEnds) {
  EXPECT_THAT(GridAxis(Range(HParamType::kDouble, 0, 1, 5)),
              ElementsAre(0.0, 0.25, 0.5, 0.75, 1.0));
  EXPECT_THAT(GridAxis(Range(HParamType::kDouble, 0.1, 0.3, 3)), ElementsAre(0.1, 0.2, 0.3));
  EXPECT_THAT(GridAxis(Range(HParamType::kLog, -4, -1, 4)), ElementsAre(0.0001, 0.001, 0.01, 0.1));
  // Ints are rounded, and a point that rounds to the one before is dropped.
  EXPECT_THAT(GridAxis(Range(HParamType::kInt, 16, 128, 3)), ElementsAre(16, 72, 128));
  EXPECT_THAT(GridAxis(Range(HParamType::kInt, 1, 3, 5)), ElementsAre(1, 2, 3));
  EXPECT_THAT(GridAxis(Range(HParamType::kInt, 0, 10, 4)), ElementsAre(0, 3, 7, 10));
  EXPECT_TRUE(GridAxis(Range(HParamType::kInt, 0, 10, 4))[1].is_number_integer());
  // One point is the range's minval.
  EXPECT_THAT(GridAxis(Range(HParamType::kDouble, 2, 3, 1)), ElementsAre(2.0));
  EXPECT_TRUE(GridAxis(Range(HParamType::kDouble, 2, 3, std::nullopt)).empty());
}

TEST(HParamSpaceTest, DrawsStayInTheirRangeAndCoverIt) {
  RandomStream stream(42);
  HyperParameter i = Range(HParamType::kInt, -2, 2, std::nullopt);
  HyperParameter d = Range(HParamType::kDouble, 0.5, 0.75, std::nullopt);
  HyperParameter l = Range(HParamType::kLog, -3, -1, std::nullopt);
  std::set<int64_t> ints;
  for (int k = 0; k < 500; ++k) {
    Json a = Draw(i, &stream), b = Draw(d, &stream), c = Draw(l, &stream);
    ASSERT_TRUE(a.is_number_integer());
    ints.insert(a.get<int64_t>());
    EXPECT_FALSE(ValueProblem(i, a)) << a;
    EXPECT_FALSE(ValueProblem(d, b)) << b;
    EXPECT_FALSE(ValueProblem(l, c)) << c;
  }
  EXPECT_EQ(ints, (std::set<int64_t>{-2, -1, 0, 1, 2}));
}

TEST(HParamSpaceTest, ValueProblems) {
  SweepSpec spec = ParseOrDie(kDigitsYaml);
  const auto& hps = spec.hyperparameters;  // batch_size dropout epochs lr model.hidden optimizer
  EXPECT_FALSE(ValueProblem(hps[0], 16));
  EXPECT_EQ(ValueProblem(hps[0], 15), "must be an integer from 16 to 128, got 15");
  EXPECT_EQ(ValueProblem(hps[0], 16.5), "must be an integer from 16 to 128, got 16.5");
  EXPECT_FALSE(ValueProblem(hps[1], 0.5));
  EXPECT_TRUE(ValueProblem(hps[1], "0.5"));
  EXPECT_FALSE(ValueProblem(hps[2], 27));
  EXPECT_EQ(ValueProblem(hps[2], 28), "must be the constant 27, got 28");
  EXPECT_FALSE(ValueProblem(hps[3], 0.0001));
  EXPECT_FALSE(ValueProblem(hps[3], 0.1));
  EXPECT_TRUE(ValueProblem(hps[3], 0.2));
  EXPECT_FALSE(ValueProblem(hps[5], "sgd"));
  EXPECT_TRUE(ValueProblem(hps[5], "SGD"));
}

TEST(HParamSpaceTest, DottedNames) {
  Json obj = Json::object();
  SetDotted(&obj, "a.b.c", 1);
  SetDotted(&obj, "a.d", "x");
  SetDotted(&obj, "e", true);
  EXPECT_EQ(obj, Json::parse(R"({"a": {"b": {"c": 1}, "d": "x"}, "e": true})"));
  ASSERT_NE(FindDotted(obj, "a.b.c"), nullptr);
  EXPECT_EQ(*FindDotted(obj, "a.b.c"), 1);
  EXPECT_EQ(FindDotted(obj, "a.b.x"), nullptr);
  EXPECT_EQ(FindDotted(obj, "e.f"), nullptr);
}

TEST(HParamSpaceTest, LongestTextIsAtLeastEveryValuesText) {
  SweepSpec spec = ParseOrDie(kDigitsYaml);
  EXPECT_EQ(LongestText(spec.hyperparameters[0]), "128");
  EXPECT_EQ(LongestText(spec.hyperparameters[5]), "adam");
  EXPECT_EQ(LongestText(spec.hyperparameters[3]).size(), 24u);
}

}  // namespace
}  // namespace cohort::sweep
