#include "model/workdir.h"

#include <fmt/format.h>

#include <filesystem>

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

std::string AnchorWorkdir(const std::string& base_dir, const std::string& workdir) {
  if (workdir.empty() || workdir[0] == '/') return workdir;
  std::string s = std::filesystem::path(base_dir.empty() ? workdir : base_dir + "/" + workdir)
                      .lexically_normal()
                      .string();
  if (s.size() > 1 && s.back() == '/') s.pop_back();
  if (s == ".") s.clear();  // the task's directory itself
  return s;
}

std::string ResolveWorkdir(const std::string& task_dir, const std::string& workdir) {
  if (workdir.empty()) return task_dir;
  if (workdir[0] == '/') return workdir;
  return task_dir + "/" + workdir;
}

}  // namespace cohort
