#include "model/workdir.h"

#include <fmt/format.h>

#include "common/strings.h"
#include "model/limits.h"

namespace cohort {

std::optional<std::string> WorkdirProblem(std::string_view workdir) {
  if (workdir.size() > kMaxWorkdirLength) {
    return fmt::format("must be at most {} characters, got {}", kMaxWorkdirLength, workdir.size());
  }
  if (workdir.find('\0') != std::string_view::npos) return "must not contain a NUL character";
  for (const std::string& part : Split(workdir, '/')) {
    if (part == "..") {
      return std::string(
          "must not contain a '..' component: a relative workdir stays within its directory; "
          "write an absolute path to run elsewhere");
    }
  }
  return std::nullopt;
}

std::string ResolveWorkdir(const std::string& task_dir, const std::string& workdir) {
  if (workdir.empty()) return task_dir;
  if (workdir[0] == '/') return workdir;
  return task_dir + "/" + workdir;
}

}  // namespace cohort
