// What an agent measures of its GPUs and tasks every few seconds (docs/observability.md, "GPU
// and host metrics"): samples that travel in its sync reports and that the master keeps a short
// history of, in memory only. A figure the agent could not measure is absent, never made up:
// declared GPUs have no utilisation, and a task's first sample has no CPU or read rate yet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/time.h"

namespace cohort {

// The most samples of one GPU or one task that one sync report carries: the ones taken since
// the master last acknowledged a report, the oldest dropped beyond this. At the default period
// (5 s) a report carries one or two; this is a minute of a master that is away.
inline constexpr size_t kMaxSamplesPerReport = 12;

// Bounds of a task's read rates: far above any machine's, below what would overflow a sum.
inline constexpr int64_t kMaxReadBytesPerSecond = int64_t{1} << 40;  // 1 TiB/s
inline constexpr int64_t kMaxReadCallsPerSecond = 1'000'000'000;

struct GpuSample {
  Timestamp at;
  std::optional<int> utilization_percent;  // 0 to 100 (NVML's utilization.gpu); absent: unknown
  std::optional<int64_t> memory_used_bytes;
};

// The samples of one GPU of the node, by its index, oldest first.
struct GpuSamples {
  int index = 0;
  std::vector<GpuSample> samples;
};

struct TaskSample {
  Timestamp at;
  // CPU time the task's processes used per second of wall time since the previous sample, in
  // thousandths of a core; absent on a task's first sample.
  std::optional<int64_t> milli_cpus;
  int64_t rss_bytes = 0;  // resident memory of all of the task's processes
  // What the task's processes read per second of wall time since the previous sample, from
  // /proc/PID/io: bytes (rchar) and read calls (syscr), files, pipes and sockets alike. Rates,
  // like milli_cpus, so that a sample means the same whichever others were dropped. Absent on a
  // task's first sample, and when a process's figures could not be read (another account's
  // process to an agent that is not root; a kernel without I/O accounting).
  std::optional<int64_t> read_bytes_per_s = {};
  std::optional<int64_t> read_calls_per_s = {};
};

}  // namespace cohort
