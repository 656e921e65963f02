#include "metrics/checkpoint_line.h"

#include <gtest/gtest.h>

#include <string>

#include "metrics/line_protocol.h"

namespace cohort::metrics {
namespace {

CheckpointMark Parse(std::string_view line) {
  auto mark = ParseCheckpointLine(line, 5);
  EXPECT_TRUE(mark.ok()) << line << ": " << mark.status().ToString();
  return mark.ok() ? *mark : CheckpointMark{};
}

// The error for a bad line; it must name `field`.
void Error(std::string_view line, std::string_view field) {
  auto mark = ParseCheckpointLine(line, 0);
  ASSERT_FALSE(mark.ok()) << line;
  EXPECT_NE(mark.status().message().find(field), std::string::npos)
      << line << " -> " << mark.status().message();
}

TEST(CheckpointLine, ParsesTheWordAloneOrWithStepAndPath) {
  EXPECT_EQ(Parse("cohort-checkpoint"), (CheckpointMark{std::nullopt, "", 5}));
  EXPECT_EQ(Parse("cohort-checkpoint\r"), (CheckpointMark{std::nullopt, "", 5}));
  EXPECT_EQ(Parse("cohort-checkpoint step=1200 path=/ckpt/step-1200.pt"),
            (CheckpointMark{1200, "/ckpt/step-1200.pt", 5}));
  EXPECT_EQ(Parse("cohort-checkpoint  \tpath=a.pt  step=-1 "), (CheckpointMark{-1, "a.pt", 5}));
}

TEST(CheckpointLine, KnowsItsLinesFromOthers) {
  EXPECT_TRUE(IsCheckpointLine("cohort-checkpoint"));
  EXPECT_TRUE(IsCheckpointLine("cohort-checkpoint garbage"));
  EXPECT_FALSE(IsCheckpointLine("cohort-checkpoints"));
  EXPECT_FALSE(IsCheckpointLine(" cohort-checkpoint"));
  EXPECT_FALSE(IsCheckpointLine("cohort-metric step=1 a=1"));
  EXPECT_FALSE(IsCheckpointLine("saved cohort-checkpoint"));
}

TEST(CheckpointLine, RefusesBadFieldsNamingThem) {
  Error("cohort-checkpoint step=1.5", "step");
  Error("cohort-checkpoint step=", "step");
  Error("cohort-checkpoint step=1 step=2", "twice");
  Error("cohort-checkpoint path=", "path");
  Error("cohort-checkpoint path=a path=b", "twice");
  Error("cohort-checkpoint path=" + std::string(kMaxCheckpointPathBytes + 1, 'p'), "path");
  Error("cohort-checkpoint loss=3", "loss: unknown field");
  Error("cohort-checkpoint now", "now");
  Error("cohort-checkpoint path=a " + std::string(kMaxMetricLineBytes, ' '), "limit");
}

TEST(CheckpointLine, TheLineReaderFindsThemAmongMetricsAndOutput) {
  const std::string stream =
      "epoch 1\n"
      "cohort-metric step=1 loss=0.5\n"
      "cohort-checkpoint step=1\n"
      "cohort-checkpoint step=x\n"
      "cohort-checkpoint";  // not finished yet
  MetricLineReader reader("output");
  MetricBatch batch;
  for (char c : stream) {
    MetricBatch got = reader.Feed(std::string_view(&c, 1), 7);
    batch.points.insert(batch.points.end(), got.points.begin(), got.points.end());
    batch.problems.insert(batch.problems.end(), got.problems.begin(), got.problems.end());
    batch.checkpoints.insert(batch.checkpoints.end(), got.checkpoints.begin(),
                             got.checkpoints.end());
  }
  EXPECT_EQ(batch.points.size(), 1u);
  EXPECT_EQ(batch.checkpoints, (std::vector<CheckpointMark>{{1, "", 7}}));
  ASSERT_EQ(batch.problems.size(), 1u);
  EXPECT_EQ(batch.problems[0].offset, stream.find("cohort-checkpoint step=x"));
  EXPECT_NE(batch.problems[0].what.find("step"), std::string::npos);
  EXPECT_EQ(reader.Feed("\n", 9).checkpoints, (std::vector<CheckpointMark>{{std::nullopt, "", 9}}));
}

TEST(CheckpointLine, AnOverlongCheckpointLineIsOneProblem) {
  MetricLineReader reader("output");
  MetricBatch got = reader.Feed("cohort-checkpoint path=" + std::string(100'000, 'p') + "\n", 0);
  EXPECT_TRUE(got.checkpoints.empty());
  ASSERT_EQ(got.problems.size(), 1u);
  EXPECT_NE(got.problems[0].what.find("longer than"), std::string::npos);
}

}  // namespace
}  // namespace cohort::metrics
