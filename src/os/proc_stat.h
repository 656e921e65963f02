// The processes of the machine as /proc/<pid>/stat describes them: what the agent sums to know
// how much CPU and memory each task uses (agent/task_sampler.h), and who is whose parent.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cohort {

struct ProcessStat {
  pid_t pid = 0;
  pid_t ppid = 0;
  int64_t cpu_ticks = 0;        // utime + stime, in clock ticks (sysconf(_SC_CLK_TCK))
  int64_t child_cpu_ticks = 0;  // cutime + cstime: of the children it has waited for
  int64_t rss_pages = 0;        // resident set, in pages (sysconf(_SC_PAGESIZE))
  int64_t start_ticks = 0;      // when it started, in clock ticks after the machine's boot
  int64_t virtual_bytes = 0;    // virtual memory size
};

// From the text of /proc/<pid>/stat; nothing if it is not such a text. The command name may
// hold spaces and parentheses: fields are counted after its last ')'.
std::optional<ProcessStat> ParseProcessStat(std::string_view text);

// Every process under `proc_root` ("/proc", or a test's tree of <pid>/stat files). A process
// that ends while the table is read is left out.
std::vector<ProcessStat> ReadProcessTable(const std::string& proc_root = "/proc");

// This process, from /proc/self/stat; nothing without /proc.
std::optional<ProcessStat> ReadOwnStat();
// When the machine booted, in seconds since the epoch (btime in /proc/stat); nothing without it.
std::optional<int64_t> BootTime(const std::string& proc_root = "/proc");
// How many file descriptors this process has open; nothing without /proc.
std::optional<int64_t> OpenFileDescriptors();
// The path of this process's executable (/proc/self/exe), or "" if it cannot be read: how
// `cohort` finds the `cohortd` beside it, and the agent the binary to run tasks with.
std::string OwnExecutable();

}  // namespace cohort
