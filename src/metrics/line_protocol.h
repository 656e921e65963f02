// The cohort-metric line protocol: training metrics as lines of text, for a job that does not
// write TensorBoard event files. A task prints them on its standard output, among its other
// output, or appends them to a file (python/cohort_metrics.py does either):
//
//   cohort-metric step=10 loss=0.31 acc=0.88
//   cohort-metric step=11 time=1700000000.25 train/loss=0.29
//
//   - The line starts with "cohort-metric " exactly; every other line is ignored (normal log
//     output). Fields are separated by spaces or tabs; a final "\r" is dropped.
//   - step=N is required: a decimal int64.
//   - time=T is optional: seconds since the Unix epoch, finite and >= 0; without it the reader
//     stamps the points with the time it was given (when the line was read).
//   - Every other field is TAG=VALUE. A tag is 1 to 256 of [A-Za-z0-9_./-], not "step" or
//     "time", at most once per line. A value is a decimal number as C++ from_chars and Python's
//     repr write it (0.31, -2, 1e-05), or nan, inf or -inf.
//   - At most 64 metrics on a line, and a line is at most 4096 bytes.
// A cohort-metric line that breaks a rule gives no point at all, and an error that names the
// field and the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "metrics/metric_point.h"

namespace cohort::metrics {

inline constexpr std::string_view kMetricLinePrefix = "cohort-metric ";
inline constexpr size_t kMaxMetricLineBytes = 4096;
inline constexpr size_t kMaxMetricsPerLine = 64;
inline constexpr size_t kMaxMetricTagBytes = 256;

// Whether `line` is meant for the protocol (starts with the prefix), well formed or not.
bool IsMetricLine(std::string_view line);

// The points of one line (without its "\n"); `read_time` is the wall time of points when the line
// has no time=. InvalidArgument, naming the field and the reason, when the line breaks a rule
// or is not a cohort-metric line at all.
StatusOr<std::vector<MetricPoint>> ParseMetricLine(std::string_view line, double read_time);

// The protocol in a stream of output fed in pieces as it is read (a task's output, a metrics
// file): whole lines are parsed as they complete, the unfinished last one is kept for the next
// piece. cohort-checkpoint lines (metrics/checkpoint_line.h) of the stream are read too, with the
// same treatment of bad and overlong lines. Memory is bounded: of a line longer than
// kMaxMetricLineBytes nothing is kept (a cohort-metric line that long is a problem; any other is
// ignored, as it would be anyway).
class MetricLineReader {
 public:
  // `source`: the name problems give, e.g. "stdout" or the file's name.
  explicit MetricLineReader(std::string source);

  // Points and problems from the lines that `bytes` completes; problems carry the offset of
  // their line in the stream.
  MetricBatch Feed(std::string_view bytes, double read_time);

 private:
  void Line(std::string_view line, uint64_t offset, double read_time, MetricBatch& batch);

  std::string source_;
  uint64_t offset_ = 0;      // where the current (unfinished) line starts in the stream
  uint64_t line_bytes_ = 0;  // how much of it has been fed
  std::string partial_;      // what is kept of it
  bool too_long_ = false;    // it went past the limit: skip to its end
};

}  // namespace cohort::metrics
