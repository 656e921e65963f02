#include "os/proc_stat.h"

#include <dirent.h>

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
       cstime = field(17), rss = field(24);
  if (!pid || !ppid || !utime || !stime || !cutime || !cstime || !rss) return std::nullopt;
  ProcessStat s;
  s.pid = *pid;
  s.ppid = static_cast<pid_t>(*ppid);
  s.cpu_ticks = *utime + *stime;
  s.child_cpu_ticks = *cutime + *cstime;
  s.rss_pages = *rss;
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

}  // namespace cohort
