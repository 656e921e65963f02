#include "metrics/line_protocol.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "common/strings.h"
#include "metrics/checkpoint_line.h"
#include "metrics/line_fields.h"

namespace cohort::metrics {
namespace {

bool IsTagChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '/' || c == '-';
}

std::optional<std::string> TagError(std::string_view tag) {
  if (tag.empty()) return "a metric needs a name before '='";
  if (tag.size() > kMaxMetricTagBytes) {
    return fmt::format("metric name is {} bytes, over the limit of {}", tag.size(),
                       kMaxMetricTagBytes);
  }
  for (char c : tag) {
    if (!IsTagChar(c)) return "a metric name may only hold letters, digits and _ . / -";
  }
  return std::nullopt;
}

// A decimal number, or nan, inf, -inf; nullopt for anything else (other spellings of the
// non-finite values included, so that the format has one spelling for each).
std::optional<double> ParseNumber(std::string_view text) {
  if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (text == "inf") return std::numeric_limits<double>::infinity();
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

}  // namespace

bool IsMetricLine(std::string_view line) { return line.starts_with(kMetricLinePrefix); }

StatusOr<std::vector<MetricPoint>> ParseMetricLine(std::string_view line, double read_time) {
  if (line.ends_with('\r')) line.remove_suffix(1);
  if (!IsMetricLine(line)) return Status::InvalidArgument("not a cohort-metric line");
  if (line.size() > kMaxMetricLineBytes) {
    return Status::InvalidArgument(
        fmt::format("line is {} bytes, over the limit of {}", line.size(), kMaxMetricLineBytes));
  }
  std::optional<int64_t> step;
  std::optional<double> time;
  std::vector<std::pair<std::string_view, double>> metrics;
  std::set<std::string_view> tags;
  auto bad = [](std::string_view field, std::string why) {
    return Status::InvalidArgument(fmt::format("{}: {}", Shown(field), why));
  };
  std::string_view rest = line.substr(kMetricLinePrefix.size());
  while (auto word = NextWord(rest)) {
    std::string_view field = *word;
    size_t eq = field.find('=');
    if (eq == std::string_view::npos) return bad(field, "expected name=value");
    std::string_view key = field.substr(0, eq);
    std::string_view text = field.substr(eq + 1);
    if (key == "step") {
      if (step) return bad(key, "given twice");
      step = ParseInteger(text, std::numeric_limits<int64_t>::min(),
                          std::numeric_limits<int64_t>::max());
      if (!step) return bad(key, fmt::format("\"{}\" is not an integer", Shown(text)));
      continue;
    }
    if (key == "time") {
      if (time) return bad(key, "given twice");
      time = ParseNumber(text);
      if (!time || !std::isfinite(*time) || *time < 0) {
        return bad(
            key, fmt::format("\"{}\" is not a time in seconds since the Unix epoch", Shown(text)));
      }
      continue;
    }
    if (auto error = TagError(key)) return bad(field, *error);
    if (!tags.insert(key).second) return bad(key, "given twice");
    if (metrics.size() == kMaxMetricsPerLine) {
      return Status::InvalidArgument(
          fmt::format("more than {} metrics on one line", kMaxMetricsPerLine));
    }
    std::optional<double> value = ParseNumber(text);
    if (!value) {
      return bad(key, fmt::format("\"{}\" is not a number (nan, inf and -inf are written so)",
                                  Shown(text)));
    }
    metrics.emplace_back(key, *value);
  }
  if (!step) return Status::InvalidArgument("step: missing (step=N is required)");
  if (metrics.empty()) return Status::InvalidArgument("no metric on the line");
  std::vector<MetricPoint> points;
  points.reserve(metrics.size());
  for (auto& [tag, value] : metrics) {
    points.push_back(MetricPoint{"", std::string(tag), *step, time.value_or(read_time), value});
  }
  return points;
}

MetricLineReader::MetricLineReader(std::string source) : source_(std::move(source)) {}

void MetricLineReader::Line(std::string_view line, uint64_t offset, double read_time,
                            MetricBatch& batch) {
  if (IsCheckpointLine(line)) {
    auto mark = ParseCheckpointLine(line, read_time);
    if (mark.ok()) {
      batch.checkpoints.push_back(*mark);
    } else {
      batch.problems.push_back(ReadProblem{source_, offset, mark.status().message()});
    }
    return;
  }
  if (!IsMetricLine(line)) return;
  auto points = ParseMetricLine(line, read_time);
  if (!points.ok()) {
    batch.problems.push_back(ReadProblem{source_, offset, points.status().message()});
    return;
  }
  batch.points.insert(batch.points.end(), std::make_move_iterator(points->begin()),
                      std::make_move_iterator(points->end()));
}

MetricBatch MetricLineReader::Feed(std::string_view bytes, double read_time) {
  MetricBatch batch;
  // The buffer may hold a line of the limit plus its "\r": ParseMetricLine judges the rest.
  constexpr size_t kMaxKept = kMaxMetricLineBytes + 1;
  while (!bytes.empty()) {
    size_t newline = bytes.find('\n');
    std::string_view piece = bytes.substr(0, newline);
    line_bytes_ += piece.size();
    if (!too_long_ && partial_.size() + piece.size() > kMaxKept) {
      too_long_ = true;
      std::string head = partial_ + std::string(piece.substr(0, kCheckpointLineWord.size() + 1));
      if (IsMetricLine(head) || IsCheckpointLine(head)) {
        batch.problems.push_back(
            ReadProblem{source_, offset_,
                        fmt::format("line longer than {} bytes; skipped", kMaxMetricLineBytes)});
      }
      partial_.clear();
    }
    if (!too_long_) partial_.append(piece);
    if (newline == std::string_view::npos) break;
    if (!too_long_) Line(partial_, offset_, read_time, batch);
    offset_ += line_bytes_ + 1;
    line_bytes_ = 0;
    partial_.clear();
    too_long_ = false;
    bytes.remove_prefix(newline + 1);
  }
  return batch;
}

}  // namespace cohort::metrics
