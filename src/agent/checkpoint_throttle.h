// How often one task's reported checkpoint may move: a task that reports a checkpoint many times
// a second (a line per step, a file rewritten in a loop) makes the agent tell the master at most
// once per kCheckpointReportInterval; the newest noticed meanwhile goes when the interval is over.
//
// Not thread-safe: the agent keeps one per task under its lock.
#pragma once

#include <optional>

#include "common/time.h"

namespace cohort::agent {

inline constexpr Duration kCheckpointReportInterval = std::chrono::seconds(5);

class CheckpointThrottle {
 public:
  // A checkpoint made at `at` was noticed; the newest is kept.
  void Noticed(Timestamp at);
  // Moves what the task reports to the newest noticed, unless it moved less than
  // kCheckpointReportInterval before `now`. True if it moved: the master should hear of it.
  bool Advance(Timestamp now);
  // The checkpoint the task reports to the master; none before the first.
  std::optional<Timestamp> reported() const { return reported_; }

 private:
  std::optional<Timestamp> noticed_;
  std::optional<Timestamp> reported_;
  std::optional<Timestamp> moved_at_;
};

}  // namespace cohort::agent
