// Job arrays (docs/job-spec.md, "Arrays"): one spec run once per index, as Slurm's --array. The
// array is its jobs, one per index, each with COHORT_ARRAY_INDEX; the first one's id is the
// array's, and at most max_parallel of them hold resources at once.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/job_id.h"

namespace cohort {

// The most jobs one array makes, and the highest index (Slurm's MaxArraySize of 1001 is as
// small; an array counts against its user's and team's queue caps besides).
inline constexpr size_t kMaxArrayJobs = 1000;
inline constexpr int kMaxArrayIndex = 999'999;

struct ArraySpec {
  std::vector<int> indices;  // ascending, each once, at least one
  int max_parallel = 0;      // at most this many of its jobs hold resources at once; 0: no limit
  bool operator==(const ArraySpec&) const = default;
};

// One job of an array, as the job records it.
struct ArrayElement {
  JobId id = 0;  // the array's: its first job's id
  int index = 0;
  int count = 0;  // jobs in the array
  int max_parallel = 0;
  bool operator==(const ArrayElement&) const = default;
};

// Slurm's forms, comma-separated: "7", "0-99", "0-99:2" (every second); "%N" at the end sets
// max_parallel when `max_parallel` is given ("0-99%10"). kInvalidArgument naming `field` and the
// part that is wrong.
StatusOr<std::vector<int>> ParseArrayIndices(std::string_view text, std::string_view field,
                                             int* max_parallel = nullptr);
// The shortest form ParseArrayIndices reads back: "0-99:2,200".
std::string FormatArrayIndices(const std::vector<int>& indices);

}  // namespace cohort
