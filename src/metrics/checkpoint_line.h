// The cohort-checkpoint line: how a task tells the agent, on its standard output, that it has just
// written a checkpoint (docs/observability.md, "Checkpoint reports"). It sits beside the
// cohort-metric lines of the same stream and follows their rules of shape:
//
//   cohort-checkpoint
//   cohort-checkpoint step=1200 path=/ckpt/step-1200.pt
//
//   - The line is "cohort-checkpoint" alone, or starts with "cohort-checkpoint " (with the
//     space); every other line is someone else's. Fields are separated by spaces or tabs; a
//     final "\r" is dropped.
//   - step=N is optional: a decimal int64. path=P is optional: 1 to 1024 bytes without blanks.
//     Each at most once; any other field is an error. Neither goes to the master: they are for
//     whoever reads the task's log, where the line stays.
//   - A line is at most 4096 bytes (the cohort-metric limit).
// The checkpoint's time is when the line was read: the line carries none, so that a task cannot
// claim a checkpoint it has not made yet.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace cohort::metrics {

inline constexpr std::string_view kCheckpointLineWord = "cohort-checkpoint";
inline constexpr size_t kMaxCheckpointPathBytes = 1024;

struct CheckpointMark {
  std::optional<int64_t> step;
  std::string path;  // empty: not given
  double read_time = 0;

  friend bool operator==(const CheckpointMark&, const CheckpointMark&) = default;
};

// Whether `line` is meant as a checkpoint report (its first word is cohort-checkpoint), well
// formed or not.
bool IsCheckpointLine(std::string_view line);

// The report of one line (without its "\n"), stamped `read_time`. InvalidArgument, naming the
// field and the reason, when the line breaks a rule or is not a cohort-checkpoint line.
StatusOr<CheckpointMark> ParseCheckpointLine(std::string_view line, double read_time);

}  // namespace cohort::metrics
