// What the metrics readers produce: points of a training curve, and the problems they met in the
// files they read (reported, then skipped: a bad record never stops the others).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "metrics/checkpoint_line.h"

namespace cohort::metrics {

// One value of one curve. The same (run, tag, step) may come again (a file read again after it
// was rewritten, a job that logs the same step twice): whoever keeps points lets the later one
// win.
struct MetricPoint {
  // The directory of the event file, relative to the directory read ("" for a file at its top,
  // "train" for train/events.out.tfevents...): TensorBoard shows each such directory as a run.
  // Always "" for the line protocol.
  std::string run;
  std::string tag;  // e.g. "loss", "train/accuracy", as the job wrote it
  int64_t step = 0;
  double wall_time = 0;  // seconds since the Unix epoch
  // As written: NaN and infinities are kept, since a loss that became NaN is what someone
  // looking at a run needs to see.
  double value = 0;

  friend bool operator==(const MetricPoint&, const MetricPoint&) = default;
};

// Something wrong in what was read, with where: a corrupted record, a file that shrank, a line
// of the line protocol that does not parse.
struct ReadProblem {
  std::string file;     // relative to the directory read, or the name the caller gave the source
  uint64_t offset = 0;  // of the record or line, in bytes from the start of the file
  std::string what;     // in words, e.g. "record data checksum mismatch; record skipped"

  friend bool operator==(const ReadProblem&, const ReadProblem&) = default;
};

// What one read of a source found.
struct MetricBatch {
  std::vector<MetricPoint> points;
  std::vector<ReadProblem> problems;
  // cohort-checkpoint lines of the stream (the line protocol only).
  std::vector<CheckpointMark> checkpoints;
};

}  // namespace cohort::metrics
