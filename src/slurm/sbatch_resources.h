// The values of sbatch's resource options as Slurm writes them (sbatch(1) and
// src/common/{proc_args,parse_time,slurm_opt}.c, SchedMD/slurm @ 284c3b9, read for behaviour
// only): node counts, GPU requests, memory sizes and time limits. Each error gives the reason
// only; the caller names the option and where it was written.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/time.h"

namespace cohort::slurm {

// -N, --nodes: "4" or "2-4" (at least 2, at most 4). Slurm's other forms, sizes with a k or m
// suffix and lists of allowed sizes ("1,5,9", "1-15:4"), are refused with the reason.
struct NodeRange {
  int min = 1;
  int max = 1;
  bool operator==(const NodeRange&) const = default;
};
StatusOr<NodeRange> ParseNodeRange(std::string_view text);

// A count of 1 or more (-n, -c, --ntasks-per-node, --cpus-per-gpu), at most `max`.
StatusOr<int> ParsePositiveCount(std::string_view text, int max);

// GPUs, optionally of one type: "2" or "a100:2".
struct GpuRequest {
  std::string type;  // empty: any type
  int count = 0;
  // As Slurm writes it back (SLURM_GPUS and the like): "2", "a100:2".
  std::string ToString() const;
  bool operator==(const GpuRequest&) const = default;
};
// -G, --gpus, --gpus-per-node, --gpus-per-task: "[type:]N". Slurm's lists of several types
// ("a100:2,v100:1") are refused: a Cohort job asks for one type.
StatusOr<GpuRequest> ParseGpuRequest(std::string_view text);
// --gres (per node): "gpu", "gpu:2", "gpu:a100", "gpu:a100:2", also as "gres/gpu..."; nothing
// for "none". A resource other than gpu ("mps:100", "shard:2", "nvme") is refused, naming it.
StatusOr<std::optional<GpuRequest>> ParseGres(std::string_view text);

// --mem, --mem-per-cpu, --mem-per-gpu: a whole number with an optional K, M, G or T (any case,
// optionally followed by B), in mebibytes without one; in bytes, whole mebibytes as Slurm keeps
// them (K rounds up). 0 is Slurm's "all the memory of each node", kept as 0.
StatusOr<int64_t> ParseMemorySize(std::string_view text);

// -t, --time: "minutes", "minutes:seconds", "hours:minutes:seconds", "days-hours",
// "days-hours:minutes", "days-hours:minutes:seconds"; "UNLIMITED", "INFINITE", "-1" and 0 are no
// limit. Slurm counts in minutes and rounds seconds up ("0:30" is 1 minute), and so does this.
struct TimeLimit {
  bool unlimited = false;
  Duration duration{0};  // whole minutes, when limited
  bool operator==(const TimeLimit&) const = default;
};
StatusOr<TimeLimit> ParseTimeLimit(std::string_view text);

}  // namespace cohort::slurm
