// The checkpoint an attempt of a job started from (docs/data.md, "Checkpoints"): the snapshot of
// its checkpoint directory that an earlier attempt left in the store, restored by each task's
// supervisor before the task started, and shown by `cohort status`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/time.h"

namespace cohort {

struct RestoredCheckpoint {
  int attempt = 0;              // the attempt that stored it
  std::optional<int64_t> step;  // the step it last reported then (cohort-checkpoint step=N)
  Timestamp taken_at;           // when it was stored
  int64_t files = 0;
  int64_t bytes = 0;

  friend bool operator==(const RestoredCheckpoint&, const RestoredCheckpoint&) = default;
};

// "the checkpoint of attempt 1 at step 40 (3 files, 1.2Mi)": what `cohort status`, the job's
// events and the task's output say.
std::string DescribeRestored(const RestoredCheckpoint& restored);

}  // namespace cohort
