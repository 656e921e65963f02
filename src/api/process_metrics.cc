#include "api/process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <string>

#include "os/proc_stat.h"
#include "os/process.h"

namespace cohort::api {
std::optional<ProcessStats> ParseProcStat(std::string_view stat, int64_t ticks_per_second,
                                          int64_t page_size, int64_t boot_time) {
  auto parsed = ParseProcessStat(stat);
  if (!parsed || ticks_per_second <= 0) return std::nullopt;
  const double ticks = static_cast<double>(ticks_per_second);
  ProcessStats s;
  s.cpu_seconds = static_cast<double>(parsed->cpu_ticks) / ticks;
  s.virtual_memory_bytes = parsed->virtual_bytes;
  s.resident_memory_bytes = parsed->rss_pages * page_size;
  s.start_time_seconds =
      static_cast<double>(boot_time) + static_cast<double>(parsed->start_ticks) / ticks;
  return s;
}

void WriteProcessMetrics(PrometheusText& out) {
  auto boot = BootTime();
  auto stats = ParseProcStat(ReadFileOrEmpty("/proc/self/stat"), ::sysconf(_SC_CLK_TCK),
                             ::sysconf(_SC_PAGESIZE), boot.value_or(0));
  if (stats) {
    out.Family("process_cpu_seconds_total", MetricType::kCounter,
               "User and system CPU time spent in seconds.");
    out.Sample("process_cpu_seconds_total", {}, stats->cpu_seconds);
    out.Family("process_virtual_memory_bytes", MetricType::kGauge, "Virtual memory size in bytes.");
    out.Sample("process_virtual_memory_bytes", {},
               static_cast<double>(stats->virtual_memory_bytes));
    out.Family("process_resident_memory_bytes", MetricType::kGauge,
               "Resident memory size in bytes.");
    out.Sample("process_resident_memory_bytes", {},
               static_cast<double>(stats->resident_memory_bytes));
    if (boot) {
      out.Family("process_start_time_seconds", MetricType::kGauge,
                 "Start time of the process since unix epoch in seconds.");
      out.Sample("process_start_time_seconds", {}, stats->start_time_seconds);
    }
  }
  if (auto fds = OpenFileDescriptors()) {
    out.Family("process_open_fds", MetricType::kGauge, "Number of open file descriptors.");
    out.Sample("process_open_fds", {}, static_cast<double>(*fds));
  }
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    out.Family("process_max_fds", MetricType::kGauge, "Maximum number of open file descriptors.");
    out.Sample("process_max_fds", {}, static_cast<double>(limit.rlim_cur));
  }
}

}  // namespace cohort::api
