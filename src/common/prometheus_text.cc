#include "common/prometheus_text.h"

#include <fmt/format.h>

#include <cmath>

namespace cohort {
namespace {

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kCounter:
      return "counter";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatSampleValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Counts and GPUs are whole: "4", never "4.0" or "4e+00". Below 2^53 a double is exact.
  if (value == std::trunc(value) && std::fabs(value) < 9007199254740992.0) {
    return fmt::format("{}", static_cast<int64_t>(value));
  }
  return fmt::format("{}", value);
}

void PrometheusText::Family(std::string_view name, MetricType type, std::string_view help) {
  fmt::format_to(std::back_inserter(text_), "# HELP {} {}\n# TYPE {} {}\n", name, EscapeHelp(help),
                 name, TypeName(type));
}

void PrometheusText::Sample(std::string_view name, const MetricLabels& labels, double value) {
  Line(name, "", labels, "", value);
}

void PrometheusText::HistogramSamples(std::string_view name, const MetricLabels& labels,
                                      const Histogram& histogram) {
  std::vector<uint64_t> cumulative = histogram.CumulativeCounts();
  for (size_t i = 0; i < cumulative.size(); ++i) {
    Line(name, "_bucket", labels, FormatSampleValue(histogram.bounds()[i]),
         static_cast<double>(cumulative[i]));
  }
  Line(name, "_bucket", labels, "+Inf", static_cast<double>(histogram.count()));
  Line(name, "_sum", labels, "", histogram.sum());
  Line(name, "_count", labels, "", static_cast<double>(histogram.count()));
}

void PrometheusText::Line(std::string_view name, std::string_view suffix,
                          const MetricLabels& labels, std::string_view le, double value) {
  auto out = std::back_inserter(text_);
  text_ += name;
  text_ += suffix;
  if (!labels.empty() || !le.empty()) {
    char sep = '{';
    for (const auto& [label, label_value] : labels) {
      fmt::format_to(out, "{}{}=\"{}\"", sep, label, EscapeLabelValue(label_value));
      sep = ',';
    }
    if (!le.empty()) fmt::format_to(out, "{}le=\"{}\"", sep, le);
    text_ += '}';
  }
  text_ += ' ';
  text_ += FormatSampleValue(value);
  text_ += '\n';
}

}  // namespace cohort
