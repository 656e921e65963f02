// The training-metrics readers (metrics/): TFRecord framing and TensorBoard events, and the
// cohort-metric line protocol. Each input is read both ways. Besides never crashing:
//   - framing is incremental: scanning the input in two pieces, carrying on from where the
//     first scan stopped, finds the same records as scanning it whole;
//   - every record found decodes to an Event or to a refusal, never anything else;
//   - a line the protocol accepts gives 1 to 64 points with valid tags, and written back in
//     the protocol reads as the same points;
//   - feeding the line reader byte by byte finds the same points and problems as feeding it all.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "metrics/event_decoder.h"
#include "metrics/line_protocol.h"
#include "metrics/tfrecord_reader.h"

namespace cohort::metrics {
namespace {

bool SameRecords(const std::vector<TfRecord>& a, const std::vector<TfRecord>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].offset != b[i].offset || a[i].data != b[i].data) return false;
  }
  return true;
}

void Records(std::string_view bytes) {
  TfRecordScan whole = ScanTfRecords(bytes, 0, "fuzz");
  uint64_t last_end = 0;
  for (const TfRecord& r : whole.records) {
    FUZZ_CHECK(r.offset >= last_end);
    FUZZ_CHECK(r.data.size() <= kMaxRecordBytes);
    last_end = r.offset + kRecordHeaderBytes + r.data.size() + kRecordFooterBytes;
    FUZZ_CHECK(last_end <= bytes.size());
    auto points = DecodeEventScalars(r.data, "run");
    if (points.ok()) {
      for (const MetricPoint& p : *points) FUZZ_CHECK(!p.tag.empty() && p.run == "run");
    }
  }
  if (whole.stop != ScanStop::kEnd) FUZZ_CHECK(whole.next_offset <= bytes.size());
  if (whole.stop == ScanStop::kIncomplete) {
    FUZZ_CHECK(whole.bytes_needed > bytes.size() - whole.next_offset);
  }

  // The same bytes in two pieces, the way a file is read while it grows.
  const size_t cut = bytes.empty() ? 0 : static_cast<unsigned char>(bytes[0]) % bytes.size();
  TfRecordScan first = ScanTfRecords(bytes.substr(0, cut), 0, "fuzz");
  std::vector<TfRecord> records = first.records;
  if (first.stop != ScanStop::kBadLength && first.next_offset <= bytes.size()) {
    TfRecordScan second = ScanTfRecords(bytes.substr(first.next_offset), first.next_offset, "fuzz");
    records.insert(records.end(), second.records.begin(), second.records.end());
    FUZZ_CHECK(SameRecords(records, whole.records));
  }
}

void Lines(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  auto points = ParseMetricLine(line, 1);
  if (points.ok()) {
    FUZZ_CHECK(IsMetricLine(line));
    FUZZ_CHECK(!points->empty() && points->size() <= kMaxMetricsPerLine);
    std::string again = "cohort-metric step=" + std::to_string((*points)[0].step);
    char number[64];
    for (const MetricPoint& p : *points) {
      FUZZ_CHECK(!p.tag.empty() && p.tag.size() <= kMaxMetricTagBytes);
      std::snprintf(number, sizeof number, "%.17g", p.value);
      std::string value = std::isnan(p.value)   ? "nan"
                          : std::isinf(p.value) ? (p.value > 0 ? "inf" : "-inf")
                                                : number;
      again += " " + p.tag + "=" + value;
    }
    if (again.size() <= kMaxMetricLineBytes) {
      auto reread = ParseMetricLine(again, (*points)[0].wall_time);
      FUZZ_CHECK(reread.ok());
      FUZZ_CHECK(reread->size() == points->size());
      for (size_t i = 0; i < points->size(); ++i) {
        const MetricPoint& a = (*points)[i];
        const MetricPoint& b = (*reread)[i];
        FUZZ_CHECK(a.tag == b.tag && a.step == b.step && a.wall_time == b.wall_time);
        FUZZ_CHECK(a.value == b.value || (std::isnan(a.value) && std::isnan(b.value)));
      }
    }
  }

  MetricLineReader all_at_once("fuzz");
  MetricBatch whole = all_at_once.Feed(text, 1);
  MetricLineReader byte_by_byte("fuzz");
  MetricBatch pieces;
  for (size_t i = 0; i < text.size(); ++i) {
    MetricBatch got = byte_by_byte.Feed(text.substr(i, 1), 1);
    pieces.points.insert(pieces.points.end(), got.points.begin(), got.points.end());
    pieces.problems.insert(pieces.problems.end(), got.problems.begin(), got.problems.end());
  }
  FUZZ_CHECK(whole.problems == pieces.problems);
  FUZZ_CHECK(whole.points.size() == pieces.points.size());
  for (size_t i = 0; i < whole.points.size(); ++i) {
    const MetricPoint& a = whole.points[i];
    const MetricPoint& b = pieces.points[i];
    FUZZ_CHECK(a.tag == b.tag && a.step == b.step);
    FUZZ_CHECK(a.value == b.value || (std::isnan(a.value) && std::isnan(b.value)));
  }
}

}  // namespace
}  // namespace cohort::metrics

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  cohort::metrics::Records(bytes);
  cohort::metrics::Lines(bytes);
  return 0;
}
