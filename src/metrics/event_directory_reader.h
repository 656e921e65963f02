// The TensorBoard event files under one directory (a task's COHORT_LOG_DIR), read as they grow.
//
// Each Poll() looks for files whose name contains "tfevents" at any depth up to a limit (a job
// may have several writers, one directory per run, and files appear while it runs), and reads
// from each what it gained since the last poll (event_file_reader.h says how changes to a file
// are handled). Points carry the file's directory relative to the root as their `run`, as
// TensorBoard names runs, and keep the tag as written.
//
// Bounded, so that a job cannot make its reader slow or big: the files tracked, the bytes read
// per poll (one huge file cannot stall the caller: the next poll starts with the file after the
// one that used up the budget, so every file gets its turn), the depth of the search and the
// directory entries looked at per poll. What a limit leaves out is reported once, as a problem
// whose file is "" (the directory itself).
// Symbolic links are not followed, to directories or to files.
//
// Not thread-safe: one caller polls.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "metrics/event_file_reader.h"
#include "metrics/metric_point.h"

namespace cohort::metrics {

struct EventDirectoryLimits {
  size_t max_files = 1000;
  uint64_t max_bytes_per_poll = uint64_t{8} << 20;
  int max_depth = 8;  // directories below the root; files at the root are at depth 0
  size_t max_entries_per_poll = 100'000;
};

class EventDirectoryReader {
 public:
  explicit EventDirectoryReader(std::filesystem::path root, EventDirectoryLimits limits = {});

  struct PollResult {
    MetricBatch batch;
    bool more = false;  // the byte budget ran out with files still to read: poll again soon
  };
  // New points and problems since the last call. A root that does not exist (yet) gives nothing.
  PollResult Poll();

  size_t files_tracked() const { return files_.size(); }

 private:
  void Discover(MetricBatch& batch);
  void ReportOnce(MetricBatch& batch, bool& reported, std::string what);

  std::filesystem::path root_;
  EventDirectoryLimits limits_;
  std::map<std::string, EventFileReader> files_;  // by path relative to the root
  std::string resume_after_;                      // the file that used up the last poll's budget
  bool reported_too_many_files_ = false;
  bool reported_too_many_entries_ = false;
  bool reported_too_deep_ = false;
};

}  // namespace cohort::metrics
