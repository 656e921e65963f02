#include "api/process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/strings.h"

namespace cohort::api {
namespace {

std::string ReadSmallFile(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<int64_t> BootTime() {
  for (const auto& line : Split(ReadSmallFile("/proc/stat"), '\n')) {
    if (line.starts_with("btime ")) return ParseInteger(Trim(line.substr(6)), 0, INT64_MAX);
  }
  return std::nullopt;
}

std::optional<int64_t> OpenFds() {
  std::error_code ec;
  int64_t n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++n;
  }
  if (ec) return std::nullopt;
  return n - 1;  // less the descriptor that lists the directory
}

}  // namespace

std::optional<ProcessStats> ParseProcStat(std::string_view stat, int64_t ticks_per_second,
                                          int64_t page_size, int64_t boot_time) {
  size_t close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0) return std::nullopt;
  // Fields from the 3rd (state), after "pid (comm) ", numbered as proc(5) numbers them.
  std::vector<std::string> fields = Split(Trim(stat.substr(close + 1)), ' ');
  auto field = [&](size_t number) -> std::optional<int64_t> {
    if (number < 3 || number - 3 >= fields.size()) return std::nullopt;
    return ParseInteger(fields[number - 3], 0, INT64_MAX);
  };
  auto utime = field(14), stime = field(15), start = field(22), vsize = field(23), rss = field(24);
  if (!utime || !stime || !start || !vsize || !rss) return std::nullopt;
  ProcessStats s;
  const double ticks = static_cast<double>(ticks_per_second);
  s.cpu_seconds = static_cast<double>(*utime + *stime) / ticks;
  s.virtual_memory_bytes = *vsize;
  s.resident_memory_bytes = *rss * page_size;
  s.start_time_seconds = static_cast<double>(boot_time) + static_cast<double>(*start) / ticks;
  return s;
}

void WriteProcessMetrics(PrometheusText& out) {
  auto boot = BootTime();
  auto stats = ParseProcStat(ReadSmallFile("/proc/self/stat"), ::sysconf(_SC_CLK_TCK),
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
  if (auto fds = OpenFds()) {
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
