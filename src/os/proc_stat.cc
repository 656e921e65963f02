#include "os/proc_stat.h"

#include <dirent.h>
#include <limits.h>
#include <unistd.h>

#include "common/strings.h"
#include "os/process.h"

namespace cohort {

std::optional<ProcessStat> ParseProcessStat(std::string_view text) {
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  auto pid = ParseInt(Trim(text.substr(0, open)), 1);
  // Fields from the 3rd (state), after "pid (comm) ", numbered as proc(5) numbers them.
  std::vector<std::string> fields = Split(Trim(text.substr(close + 1)), ' ');
  auto field = [&](size_t number) -> std::optional<int64_t> {
    if (number < 3 || number - 3 >= fields.size()) return std::nullopt;
    return ParseInteger(fields[number - 3], 0, INT64_MAX);
  };
  auto ppid = field(4), utime = field(14), stime = field(15), cutime = field(16),
       cstime = field(17), start = field(22), vsize = field(23), rss = field(24);
  if (!pid || !ppid || !utime || !stime || !cutime || !cstime || !start || !vsize || !rss) {
    return std::nullopt;
  }
  ProcessStat s;
  s.pid = *pid;
  s.ppid = static_cast<pid_t>(*ppid);
  s.cpu_ticks = *utime + *stime;
  s.child_cpu_ticks = *cutime + *cstime;
  s.rss_pages = *rss;
  s.start_ticks = *start;
  s.virtual_bytes = *vsize;
  return s;
}

std::vector<ProcessStat> ReadProcessTable(const std::string& proc_root) {
  std::vector<ProcessStat> out;
  DIR* proc = ::opendir(proc_root.c_str());
  if (!proc) return out;
  while (dirent* e = ::readdir(proc)) {
    if (!ParseInt(e->d_name, 1)) continue;  // the other entries are not processes
    auto stat = ParseProcessStat(ReadFileOrEmpty(proc_root + "/" + e->d_name + "/stat"));
    if (stat) out.push_back(*stat);
  }
  ::closedir(proc);
  return out;
}

std::optional<ProcessStat> ReadOwnStat() {
  return ParseProcessStat(ReadFileOrEmpty("/proc/self/stat"));
}

std::optional<int64_t> BootTime(const std::string& proc_root) {
  for (const auto& line : Split(ReadFileOrEmpty(proc_root + "/stat"), '\n')) {
    if (line.starts_with("btime ")) return ParseInteger(Trim(line.substr(6)), 0, INT64_MAX);
  }
  return std::nullopt;
}

std::optional<int64_t> OpenFileDescriptors() {
  DIR* fds = ::opendir("/proc/self/fd");
  if (!fds) return std::nullopt;
  int64_t n = 0;
  while (dirent* e = ::readdir(fds)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(fds);
  return n - 1;  // less the descriptor that lists the directory
}

std::string OwnExecutable() {
  char buf[PATH_MAX] = {};
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace cohort
