#include "metrics/tfrecord_reader.h"

#include <fmt/format.h>

#include <limits>
#include <string>

#include "metrics/masked_crc32c.h"

namespace cohort::metrics {
namespace {

// The file format is little-endian whatever the machine; these read and write it byte by byte.
uint64_t LoadLittleEndian(std::string_view bytes, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  return v;
}

void AppendLittleEndian(std::string& out, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

TfRecordScan ScanTfRecords(std::string_view bytes, uint64_t offset, std::string_view file) {
  TfRecordScan scan;
  auto problem = [&](uint64_t at, std::string what) {
    scan.problems.push_back(ReadProblem{std::string(file), at, std::move(what)});
  };
  size_t pos = 0;
  while (pos < bytes.size()) {
    const uint64_t at = offset + pos;
    std::string_view rest = bytes.substr(pos);
    if (rest.size() < kRecordHeaderBytes) {
      scan.next_offset = at;
      scan.stop = ScanStop::kIncomplete;
      scan.bytes_needed = kRecordHeaderBytes;
      return scan;
    }
    const uint64_t length = LoadLittleEndian(rest, 8);
    if (static_cast<uint32_t>(LoadLittleEndian(rest.substr(8), 4)) !=
        MaskedCrc32c(rest.substr(0, 8))) {
      problem(at, "record length checksum mismatch; the rest of the file cannot be framed");
      scan.next_offset = at;
      scan.stop = ScanStop::kBadLength;
      return scan;
    }
    constexpr uint64_t kFraming = kRecordHeaderBytes + kRecordFooterBytes;
    if (length > std::numeric_limits<uint64_t>::max() - kFraming - at) {
      problem(at, fmt::format("record length {} runs past the end of any file", length));
      scan.next_offset = at;
      scan.stop = ScanStop::kBadLength;
      return scan;
    }
    const uint64_t total = kFraming + length;
    if (length > kMaxRecordBytes) {
      problem(at, fmt::format("record of {} bytes is over the limit of {} bytes; skipped", length,
                              kMaxRecordBytes));
      if (total >= rest.size()) {
        scan.next_offset = at + total;
        scan.stop = ScanStop::kEnd;
        return scan;
      }
      pos += total;
      continue;
    }
    if (rest.size() < total) {
      scan.next_offset = at;
      scan.stop = ScanStop::kIncomplete;
      scan.bytes_needed = total;
      return scan;
    }
    std::string_view data = rest.substr(kRecordHeaderBytes, length);
    uint32_t stored =
        static_cast<uint32_t>(LoadLittleEndian(rest.substr(kRecordHeaderBytes + length), 4));
    if (stored != MaskedCrc32c(data)) {
      // The length was checked, so the next record is still where it says: skip only this one.
      problem(at, "record data checksum mismatch; record skipped");
    } else {
      scan.records.push_back(TfRecord{at, data});
    }
    pos += total;
  }
  scan.next_offset = offset + bytes.size();
  scan.stop = ScanStop::kEnd;
  return scan;
}

std::string FrameTfRecord(std::string_view data) {
  std::string out;
  out.reserve(kRecordHeaderBytes + data.size() + kRecordFooterBytes);
  AppendLittleEndian(out, data.size(), 8);
  AppendLittleEndian(out, MaskedCrc32c(out), 4);
  out.append(data);
  AppendLittleEndian(out, MaskedCrc32c(data), 4);
  return out;
}

}  // namespace cohort::metrics
