#include "agent/task_memory.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "common/strings.h"

namespace cohort::agent {

Json TaskMemoryJson(const TaskMemorySpec& spec) {
  return Json{{"limit_bytes", spec.limit_bytes},
              {"cgroup_version", static_cast<int>(spec.version)},
              {"cgroup_parent", spec.parent}};
}

std::optional<TaskMemorySpec> TaskMemorySpecFrom(const Json& spec_doc) {
  auto it = spec_doc.find("memory");
  if (it == spec_doc.end() || it->is_null()) return std::nullopt;
  TaskMemorySpec spec;
  spec.limit_bytes = it->at("limit_bytes").get<int64_t>();
  int version = it->at("cgroup_version").get<int>();
  if (version != 1 && version != 2) throw std::runtime_error("memory.cgroup_version: 1 or 2");
  spec.version = version == 1 ? CgroupVersion::kV1 : CgroupVersion::kV2;
  spec.parent = it->at("cgroup_parent").get<std::string>();
  if (spec.limit_bytes <= 0) return std::nullopt;
  return spec;
}

std::optional<TaskMemoryLimit> TaskMemoryLimit::Prepare(const TaskMemorySpec& spec,
                                                        const std::string& task_dir,
                                                        std::string* warning) {
  // Unique on the machine while this supervisor lives, and telling whose it is.
  std::string name =
      fmt::format("{}-{}", std::filesystem::path(task_dir).filename().string(), ::getpid());
  auto group =
      MemoryCgroup::Create(MemoryCgroups(spec.version, spec.parent), name, spec.limit_bytes);
  if (!group.ok()) {
    *warning = group.status().message();
    return std::nullopt;
  }
  return TaskMemoryLimit(std::move(*group), spec.limit_bytes);
}

std::string TaskMemoryLimit::Finish(bool main_killed_by_sigkill) const {
  std::optional<int64_t> kills = group_.OomKills();
  if (Status removed = group_.Remove(); !removed.ok()) {
    fmt::print(stderr, "run-task: {}\n", removed.message());
  }
  if (!kills || *kills == 0) return "";
  std::string limit =
      fmt::format("its memory limit of {} (the task's memory request)", MemoryText(limit_bytes_));
  if (main_killed_by_sigkill) {
    return fmt::format("exceeded {}; killed by the kernel's OOM killer", limit);
  }
  return fmt::format("a process of the task exceeded {}; killed by the kernel's OOM killer", limit);
}

int RemoveLeftoverTaskGroups(const MemoryCgroups& parent) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(parent.parent(), ec)) {
    if (!entry.is_directory(ec)) continue;
    const std::string name = entry.path().filename().string();
    size_t dash = name.rfind('-');
    if (dash == std::string::npos) continue;
    auto pid = ParseInt(name.substr(dash + 1), 1);
    // Alive: a supervisor (of this agent or of another on the machine) still owns it.
    if (!pid || ::kill(*pid, 0) == 0 || errno != ESRCH) continue;
    if (MemoryCgroup::Existing(parent, name).Remove().ok()) ++removed;
  }
  return removed;
}

bool JoinMemoryCgroup(const char* join_file) {
  int fd = ::open(join_file, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // "0": the writer itself, in v1 and v2 alike.
  bool ok = ::write(fd, "0", 1) == 1;
  int err = errno;
  ::close(fd);
  errno = err;
  return ok;
}

}  // namespace cohort::agent
