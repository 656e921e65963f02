// The process_* series every Prometheus client library exports (CPU time, memory, file
// descriptors, start time), for GET /metrics, read from /proc/self on each scrape: a few small
// reads and one directory listing of at most --max-connections descriptors.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/prometheus_text.h"

namespace cohort::api {

struct ProcessStats {
  double cpu_seconds = 0;  // user and system
  int64_t virtual_memory_bytes = 0;
  int64_t resident_memory_bytes = 0;
  double start_time_seconds = 0;  // since the Unix epoch
};

// From the text of /proc/<pid>/stat, with the clock ticks per second and page size (sysconf)
// and the boot time (btime in /proc/stat, seconds since the epoch). Nothing if it is not such
// a text. The command name may hold spaces and parentheses: fields are counted after its last ')'.
std::optional<ProcessStats> ParseProcStat(std::string_view stat, int64_t ticks_per_second,
                                          int64_t page_size, int64_t boot_time);

// This process's series; one it cannot read (no /proc) is left out.
void WriteProcessMetrics(PrometheusText& out);

}  // namespace cohort::api
