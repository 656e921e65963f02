#include "sim/sweep_rows.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace cohort::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SweepShape, ParsesKeysWithAshaDefaultsAndRoundTrips) {
  auto shape = ParseSweepShape("trials=200; concurrency=16;divisor=3;rungs=4");
  ASSERT_TRUE(shape.ok()) << shape.status().message();
  EXPECT_EQ(shape->trials, 200);
  EXPECT_EQ(shape->concurrency, 16);
  EXPECT_EQ(shape->divisor, 3);
  EXPECT_EQ(shape->rungs, 4);
  ASSERT_EQ(shape->stop.size(), 3u) << "one per rung but the last";
  EXPECT_DOUBLE_EQ(shape->stop[0], 1 - 1.0 / 3) << "what ASHA stops in expectation";
  auto back = ParseSweepShape(FormatSweepShape(*shape));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, *shape);

  auto defaults = ParseSweepShape("trials=8");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->concurrency, 4);
  EXPECT_EQ(defaults->divisor, 4);
  EXPECT_EQ(defaults->rungs, 5);
  auto per_rung = ParseSweepShape("trials=8;rungs=3;stop=0.5/0.25");
  ASSERT_TRUE(per_rung.ok());
  EXPECT_THAT(per_rung->stop, ElementsAre(0.5, 0.25));
  auto one = ParseSweepShape("trials=8;rungs=3;stop=0.1");
  ASSERT_TRUE(one.ok());
  EXPECT_THAT(one->stop, ElementsAre(0.1, 0.1));
}

TEST(SweepShape, NamesTheBadKeyAndWhy) {
  auto why = [](std::string_view text) {
    auto s = ParseSweepShape(text);
    return s.ok() ? std::string("ok") : s.status().message();
  };
  EXPECT_THAT(why("concurrency=4"), HasSubstr("trials is required"));
  EXPECT_THAT(why("trials=0"), HasSubstr("trials must be 1 to"));
  EXPECT_THAT(why("trials=x"), HasSubstr("trials must be an integer"));
  EXPECT_THAT(why("trials=4;concurrency=0"), HasSubstr("concurrency must be at least 1"));
  EXPECT_THAT(why("trials=4;divisor=1"), HasSubstr("divisor must be 2 to 100"));
  EXPECT_THAT(why("trials=4;divisor=101"), HasSubstr("divisor must be 2 to 100"));
  EXPECT_THAT(why("trials=4;rungs=0"), HasSubstr("rungs must be 1 to 10"));
  EXPECT_THAT(why("trials=4;rungs=11"), HasSubstr("rungs must be 1 to 10"));
  EXPECT_THAT(why("trials=4;rungs=3;stop=0.5/0.5/0.5"), HasSubstr("one per rung but the last"));
  EXPECT_THAT(why("trials=4;stop=1.5"), HasSubstr("\"1.5\" is not a fraction"));
  EXPECT_THAT(why("trials=4;seed=3"), HasSubstr("seed is not a sweep key"));
  EXPECT_THAT(why("trials"), HasSubstr("trials is not key=value"));
}

TEST(DrawTrials, StopsTheShareOfEachRungAndIsTheSameForTheSameSeed) {
  auto shape = ParseSweepShape("trials=20000;divisor=3;rungs=4;stop=0.5/0.5/0.5");
  ASSERT_TRUE(shape.ok());
  std::vector<TrialDraw> draws = DrawTrials(*shape, 2700, "hp", 7);
  ASSERT_EQ(draws.size(), 20000u);
  std::vector<int> at(4);
  for (const auto& d : draws) {
    ++at[static_cast<size_t>(d.rung)];
    EXPECT_DOUBLE_EQ(d.length, 2700 / std::pow(3.0, 3 - d.rung));
  }
  // Half stop at each rung below the last: 1/2, 1/4, 1/8, and 1/8 complete.
  EXPECT_NEAR(at[0] / 20000.0, 0.5, 0.015);
  EXPECT_NEAR(at[1] / 20000.0, 0.25, 0.015);
  EXPECT_NEAR(at[2] / 20000.0, 0.125, 0.015);
  EXPECT_NEAR(at[3] / 20000.0, 0.125, 0.015);
  double mean = 0;
  for (const auto& d : draws) mean += d.length / 20000.0;
  EXPECT_NEAR(mean, ExpectedTrialLength(*shape, 2700), 0.03 * mean);

  std::vector<TrialDraw> again = DrawTrials(*shape, 2700, "hp", 7);
  std::vector<TrialDraw> other = DrawTrials(*shape, 2700, "hp", 8);
  int same = 0, differ = 0;
  for (size_t i = 0; i < draws.size(); ++i) {
    same += again[i].rung == draws[i].rung;
    differ += other[i].rung != draws[i].rung;
  }
  EXPECT_EQ(same, 20000);
  EXPECT_GT(differ, 1000) << "another seed draws other rungs";

  auto no_rungs = ParseSweepShape("trials=5;rungs=1");
  ASSERT_TRUE(no_rungs.ok());
  for (const auto& d : DrawTrials(*no_rungs, 100, "grid", 1)) {
    EXPECT_EQ(d.rung, 0);
    EXPECT_EQ(d.length, 100) << "without rungs every trial runs its full length";
  }
}

}  // namespace
}  // namespace cohort::sim
