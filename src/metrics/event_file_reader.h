// One TensorBoard event file, read a little at a time while its writer appends to it.
//
// The reader remembers where it stopped (a record boundary) and reads only what came after. A
// record that is not whole yet is left for the next call. What it does when the file changes
// under it:
//   - the file shrank, or is another file now (device and inode changed: replaced by a rename):
//     a problem is reported and the file is read again from the start. TensorFlow's and
//     PyTorch's writers never truncate or rewrite (each writer makes a new file), so this is a
//     file copied or restored over the old one; reading it whole again may give points already
//     given, which the one who keeps them replaces (metric_point.h).
//   - a record's length fails its checksum: where the next record starts is unknown. Guessing
//     (searching for something that checksums like a header) could pair a stale length with
//     random data, and TensorFlow's own reader stops there too (DataLoss). So the problem is
//     reported once and the file is not read past it; each time the file's size changes the
//     reader tries that spot again, in case what it saw was a write not yet complete (a file
//     extended with zeros before its data lands, as network file systems can show).
//   - a record's data fails its checksum: the length was good, so only that record is skipped.
// Symbolic links are not followed (O_NOFOLLOW), nor is anything but a regular file read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "metrics/metric_point.h"

namespace cohort::metrics {

class EventFileReader {
 public:
  // `path`: the file; `name`: how problems name it; `run`: put in each point.
  EventFileReader(std::filesystem::path path, std::string name, std::string run);

  struct Read {
    MetricBatch batch;
    uint64_t bytes_read = 0;
    bool more = false;  // stopped at `max_bytes` with more of the file still to read
  };
  // Reads what the file gained since the last call: about `max_bytes` at most, except that a
  // record is never split, so one record longer than that (up to kMaxRecordBytes) is read
  // whole. A file that is gone reads as nothing.
  Read ReadNew(uint64_t max_bytes);

  uint64_t offset() const { return offset_; }

 private:
  void StartOver(Read& read, uint64_t at, std::string why);

  std::filesystem::path path_;
  std::string name_;
  std::string run_;
  uint64_t offset_ = 0;  // the next record starts here
  // The size of that record when a read found it incomplete: the next read takes at least this
  // much, whatever its budget, so that a record larger than the budget is still read.
  uint64_t needed_ = 0;
  uint64_t size_seen_ = 0;
  std::optional<std::pair<dev_t, ino_t>> identity_;
  // Where a bad record length stopped the reading, and the file's size then.
  std::optional<uint64_t> stuck_at_;
  uint64_t stuck_size_ = 0;
  std::string last_error_;  // the last open or read error reported, so it is reported once
};

}  // namespace cohort::metrics
