// Prometheus' text exposition format, version 0.0.4 (what GET /metrics answers): each metric
// family as its # HELP and # TYPE lines, then one line per sample, `name{label="value"} value`.
//
// Written by hand rather than with prometheus-cpp: the format is a few rules (below), the
// master computes every value on demand from what it holds, so a registry of live metric objects
// would only be a second copy of its state (docs/observability.md, "Prometheus metrics").
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/histogram.h"

namespace cohort {

enum class MetricType { kGauge, kCounter, kHistogram };

// A sample's labels, in the order written. Names are the caller's constants; values are escaped.
using MetricLabels = std::vector<std::pair<std::string_view, std::string_view>>;

// The content type of the format, for the answer's Content-Type.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// A label value as the format quotes it: backslash, double quote and newline escaped.
std::string EscapeLabelValue(std::string_view value);
// A HELP text: backslash and newline escaped (quotes stay as they are).
std::string EscapeHelp(std::string_view help);
// A sample value: integers without exponent or point ("4"), others as short as they round-trip,
// and +Inf, -Inf, NaN.
std::string FormatSampleValue(double value);

class PrometheusText {
 public:
  // Starts a family: its HELP and TYPE lines. Each family once, before its samples.
  void Family(std::string_view name, MetricType type, std::string_view help);
  void Sample(std::string_view name, const MetricLabels& labels, double value);
  // The histogram's samples: NAME_bucket for each bound, cumulative, then le="+Inf", NAME_sum
  // and NAME_count; `labels` on each, `le` after them.
  void HistogramSamples(std::string_view name, const MetricLabels& labels,
                        const Histogram& histogram);

  const std::string& text() const { return text_; }
  std::string Take() { return std::move(text_); }

 private:
  void Line(std::string_view name, std::string_view suffix, const MetricLabels& labels,
            std::string_view le, double value);

  std::string text_;
};

}  // namespace cohort
