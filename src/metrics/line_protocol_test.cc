#include "metrics/line_protocol.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace cohort::metrics {
namespace {

std::vector<MetricPoint> Parse(std::string_view line, double read_time = 5) {
  auto points = ParseMetricLine(line, read_time);
  EXPECT_TRUE(points.ok()) << line << ": " << points.status().ToString();
  return points.ok() ? *points : std::vector<MetricPoint>{};
}

// The error for a bad line; it must name `field`.
std::string Error(std::string_view line, std::string_view field) {
  auto points = ParseMetricLine(line, 0);
  EXPECT_FALSE(points.ok()) << line;
  if (points.ok()) return "";
  std::string message = points.status().message();
  EXPECT_NE(message.find(field), std::string::npos) << line << " -> " << message;
  return message;
}

TEST(LineProtocol, ParsesALine) {
  EXPECT_EQ(Parse("cohort-metric step=10 loss=0.31 acc=0.88"),
            (std::vector<MetricPoint>{{"", "loss", 10, 5, 0.31}, {"", "acc", 10, 5, 0.88}}));
}

TEST(LineProtocol, TakesTheLinesTimeElseTheReadTime) {
  EXPECT_EQ(Parse("cohort-metric time=1700000000.25 step=3 train/loss=-2")[0],
            (MetricPoint{"", "train/loss", 3, 1700000000.25, -2}));
  EXPECT_EQ(Parse("cohort-metric step=3 x=1", 42)[0].wall_time, 42);
}

TEST(LineProtocol, AcceptsWhatPythonWrites) {
  auto points = Parse("cohort-metric step=0 a=1e-05 b=3 c=-0.0 d=nan e=inf f=-inf g=.5 h=1.");
  ASSERT_EQ(points.size(), 8u);
  EXPECT_EQ(points[0].value, 1e-05);
  EXPECT_TRUE(std::isnan(points[3].value));
  EXPECT_EQ(points[4].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(points[5].value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(points[6].value, 0.5);
}

TEST(LineProtocol, ToleratesSpacingAndACarriageReturn) {
  EXPECT_EQ(Parse("cohort-metric   step=1\tloss=2  \r").size(), 1u);
}

TEST(LineProtocol, TagsMayHoldDotsSlashesAndDashes) {
  EXPECT_EQ(Parse("cohort-metric step=1 eval/top-1.acc_v2=0.5")[0].tag, "eval/top-1.acc_v2");
}

TEST(LineProtocol, OnlyLinesWithThePrefixAreMetricLines) {
  EXPECT_TRUE(IsMetricLine("cohort-metric step=1 a=1"));
  EXPECT_TRUE(IsMetricLine("cohort-metric garbage"));
  EXPECT_FALSE(IsMetricLine("epoch 1: loss=0.3"));
  EXPECT_FALSE(IsMetricLine(" cohort-metric step=1 a=1"));
  EXPECT_FALSE(IsMetricLine("cohort-metrics step=1 a=1"));
  EXPECT_FALSE(IsMetricLine("cohort-metric"));
  EXPECT_FALSE(ParseMetricLine("hello", 0).ok());
}

TEST(LineProtocol, ErrorsNameTheFieldAndTheReason) {
  Error("cohort-metric loss=1", "step");
  Error("cohort-metric step=1", "no metric");
  Error("cohort-metric step=1.5 a=1", "step");
  Error("cohort-metric step=x a=1", "step");
  Error("cohort-metric step=1 step=2 a=1", "twice");
  Error("cohort-metric step=1 time=-3 a=1", "time");
  Error("cohort-metric step=1 time=nan a=1", "time");
  Error("cohort-metric step=1 time=1 time=2 a=1", "time");
  Error("cohort-metric step=1 loss=abc", "loss");
  Error("cohort-metric step=1 loss=", "loss");
  Error("cohort-metric step=1 loss=1,5", "loss");
  Error("cohort-metric step=1 loss=0x10", "loss");
  Error("cohort-metric step=1 loss=1e999", "loss");  // out of range
  Error("cohort-metric step=1 loss=NaN", "loss");    // one spelling: nan
  Error("cohort-metric step=1 loss=infinity", "loss");
  Error("cohort-metric step=1 loss=+1", "loss");
  Error("cohort-metric step=1 loss", "loss");
  Error("cohort-metric step=1 =3", "name");
  Error("cohort-metric step=1 lo$s=3", "lo$s");
  Error("cohort-metric step=1 a=1 a=2", "twice");
  Error("cohort-metric step=1 " + std::string(kMaxMetricTagBytes + 1, 't') + "=1", "limit");
}

TEST(LineProtocol, BoundsTheMetricsAndTheLine) {
  std::string line = "cohort-metric step=1";
  for (size_t i = 0; i < kMaxMetricsPerLine; ++i) line += " m" + std::to_string(i) + "=1";
  EXPECT_EQ(Parse(line).size(), kMaxMetricsPerLine);
  Error(line + " one_more=1", "more than 64");
  std::string long_line = "cohort-metric step=1 a=1 " + std::string(kMaxMetricLineBytes, ' ');
  Error(long_line, "limit");
}

TEST(MetricLineReader, ReadsMetricLinesAmongOtherOutputFedInPieces) {
  const std::string stream =
      "starting\n"
      "cohort-metric step=1 loss=0.5\n"
      "epoch 1 done\n"
      "cohort-metric step=2 loss=0.25 acc=0.9\n"
      "cohort-metric step=oops loss=1\n"
      "cohort-metric step=3 loss=0.1";  // not finished yet
  for (size_t piece : {size_t{1}, size_t{3}, size_t{1000}}) {
    SCOPED_TRACE(piece);
    MetricLineReader reader("stdout");
    MetricBatch all;
    for (size_t at = 0; at < stream.size(); at += piece) {
      MetricBatch got = reader.Feed(std::string_view(stream).substr(at, piece), 7);
      all.points.insert(all.points.end(), got.points.begin(), got.points.end());
      all.problems.insert(all.problems.end(), got.problems.begin(), got.problems.end());
    }
    EXPECT_EQ(all.points,
              (std::vector<MetricPoint>{
                  {"", "loss", 1, 7, 0.5}, {"", "loss", 2, 7, 0.25}, {"", "acc", 2, 7, 0.9}}));
    ASSERT_EQ(all.problems.size(), 1u);
    EXPECT_EQ(all.problems[0].file, "stdout");
    EXPECT_EQ(all.problems[0].offset, stream.find("cohort-metric step=oops"));
    MetricBatch last = reader.Feed("\n", 8);
    ASSERT_EQ(last.points.size(), 1u);
    EXPECT_EQ(last.points[0].step, 3);
  }
}

TEST(MetricLineReader, SkipsOverlongLinesKeepingMemoryBounded) {
  MetricLineReader reader("log");
  std::string huge_log_line(100'000, 'x');
  std::string huge_metric = "cohort-metric step=1 " + std::string(100'000, 'y');
  MetricBatch batch;
  for (const std::string& text : {huge_log_line + "\n", huge_metric, std::string("\n"),
                                  std::string("cohort-metric step=2 ok=1\n")}) {
    MetricBatch got = reader.Feed(text, 0);
    batch.points.insert(batch.points.end(), got.points.begin(), got.points.end());
    batch.problems.insert(batch.problems.end(), got.problems.begin(), got.problems.end());
  }
  ASSERT_EQ(batch.problems.size(), 1u);  // the metric line, not the log line
  EXPECT_EQ(batch.problems[0].offset, huge_log_line.size() + 1);
  EXPECT_NE(batch.problems[0].what.find("longer than"), std::string::npos);
  ASSERT_EQ(batch.points.size(), 1u);
  EXPECT_EQ(batch.points[0].tag, "ok");
}

}  // namespace
}  // namespace cohort::metrics
