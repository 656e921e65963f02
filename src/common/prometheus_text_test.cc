#include "common/prometheus_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace cohort {
namespace {

TEST(PrometheusText, EscapesBackslashQuoteAndNewlineInLabelValues) {
  EXPECT_EQ(EscapeLabelValue("plain-name_1.x"), "plain-name_1.x");
  EXPECT_EQ(EscapeLabelValue(R"(a\b"c)"
                             "\n"
                             "d"),
            R"(a\\b\"c\nd)");
  // HELP keeps quotes: only backslash and newline are special there.
  EXPECT_EQ(EscapeHelp("say \"hi\"\\\nbye"), R"(say "hi"\\\nbye)");
}

TEST(PrometheusText, WritesWholeNumbersWithoutAPointAndInfinitiesByName) {
  EXPECT_EQ(FormatSampleValue(4), "4");
  EXPECT_EQ(FormatSampleValue(-3), "-3");
  EXPECT_EQ(FormatSampleValue(0), "0");
  EXPECT_EQ(FormatSampleValue(0.25), "0.25");
  EXPECT_EQ(FormatSampleValue(0.0001), "0.0001");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatSampleValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatSampleValue(std::nan("")), "NaN");
}

TEST(PrometheusText, AFamilyIsItsHelpAndTypeThenOneLinePerSample) {
  PrometheusText out;
  out.Family("cohort_gpus", MetricType::kGauge, "GPUs of each node.\nSecond line");
  out.Sample("cohort_gpus", {{"node", "n1"}}, 4);
  out.Sample("cohort_gpus", {{"node", "we\"ird\\\nnode"}, {"team", "t"}}, 2);
  out.Family("cohort_up", MetricType::kCounter, "no labels");
  out.Sample("cohort_up", {}, 1);
  EXPECT_EQ(out.text(),
            "# HELP cohort_gpus GPUs of each node.\\nSecond line\n"
            "# TYPE cohort_gpus gauge\n"
            "cohort_gpus{node=\"n1\"} 4\n"
            "cohort_gpus{node=\"we\\\"ird\\\\\\nnode\",team=\"t\"} 2\n"
            "# HELP cohort_up no labels\n"
            "# TYPE cohort_up counter\n"
            "cohort_up 1\n");
}

TEST(PrometheusText, AHistogramHasCumulativeBucketsEndingInInfThenSumAndCount) {
  Histogram h({0.25, 0.5, 1});
  h.ObserveSeconds(0.125);
  h.ObserveSeconds(0.25);  // on a bound: in it
  h.ObserveSeconds(0.375);
  h.ObserveSeconds(30);
  PrometheusText out;
  out.Family("x_seconds", MetricType::kHistogram, "h");
  out.HistogramSamples("x_seconds", {{"route", "/a/{id}"}}, h);
  EXPECT_EQ(out.text(),
            "# HELP x_seconds h\n"
            "# TYPE x_seconds histogram\n"
            "x_seconds_bucket{route=\"/a/{id}\",le=\"0.25\"} 2\n"
            "x_seconds_bucket{route=\"/a/{id}\",le=\"0.5\"} 3\n"
            "x_seconds_bucket{route=\"/a/{id}\",le=\"1\"} 3\n"
            "x_seconds_bucket{route=\"/a/{id}\",le=\"+Inf\"} 4\n"
            "x_seconds_sum{route=\"/a/{id}\"} 30.75\n"
            "x_seconds_count{route=\"/a/{id}\"} 4\n");
  // Without labels, le is the only one.
  PrometheusText bare;
  bare.HistogramSamples("y", {}, Histogram({1}));
  EXPECT_EQ(bare.text(), "y_bucket{le=\"1\"} 0\ny_bucket{le=\"+Inf\"} 0\ny_sum 0\ny_count 0\n");
}

}  // namespace
}  // namespace cohort
