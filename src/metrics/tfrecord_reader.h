// TFRecord framing, the container of TensorBoard event files: each record is
//   uint64 length (little-endian) | uint32 masked CRC32C of those 8 bytes | data | uint32 masked
//   CRC32C of the data.
// ScanTfRecords reads the records in a run of bytes taken from a file at a record boundary. It
// does no I/O and keeps no state, so a caller can feed it whatever it has read so far and carry
// on later from `next_offset`: a file still being written ends in half a record, which is not an
// error, only something to read again once it is whole.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/metric_point.h"

namespace cohort::metrics {

inline constexpr uint64_t kRecordHeaderBytes = 12;  // length and its CRC
inline constexpr uint64_t kRecordFooterBytes = 4;   // the data's CRC
// The largest record read. A longer one (whose length passes its checksum) is reported and
// skipped without being read: scalar events are ~50 bytes, and what is this large (a big graph,
// an image) holds no scalar. A claimed length is never an allocation.
inline constexpr uint64_t kMaxRecordBytes = uint64_t{16} << 20;

struct TfRecord {
  uint64_t offset = 0;    // of the record's header in the file
  std::string_view data;  // points into the bytes given to ScanTfRecords
};

enum class ScanStop {
  // All the bytes were used. `next_offset` is their end, or beyond it when the last record was
  // too long and is being skipped: the caller reads on from there once the file has it.
  kEnd,
  // The record at `next_offset` is not whole in these bytes: a writer is in the middle of it,
  // or the caller read too little. `bytes_needed` is the size of all of it (just the header's 12
  // while the length is not known yet); read at least that much from `next_offset` to go on.
  kIncomplete,
  // The length at `next_offset` fails its checksum (or cannot be the length of a record), so
  // where the next record starts is unknown: the scan reports it and stops there. Bytes after it
  // are not searched for something that looks like a record; see event_file_reader.h for what
  // is done with such a file.
  kBadLength,
};

struct TfRecordScan {
  std::vector<TfRecord> records;
  std::vector<ReadProblem> problems;  // bad data checksums (record skipped), too long, bad length
  uint64_t next_offset = 0;
  ScanStop stop = ScanStop::kEnd;
  uint64_t bytes_needed = 0;  // for kIncomplete
};

// Reads the records in `bytes`, which were read from `file` (the name put in problems) starting
// at `offset`, a record boundary.
TfRecordScan ScanTfRecords(std::string_view bytes, uint64_t offset, std::string_view file);

// The framing of one record around `data`: what a writer appends (tests and fuzzing use it).
std::string FrameTfRecord(std::string_view data);

}  // namespace cohort::metrics
