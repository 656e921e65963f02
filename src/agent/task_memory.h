// The supervisor's hook for a task's memory limit (os/memory_cgroup.h): the agent found the
// node's memory controller and put it, with the task's memory request, in spec.json's "memory";
// the supervisor makes the task's group, the task joins it before its command runs, and once
// every process of the task has ended the group says whether the kernel's OOM killer fired.
#pragma once

#include <optional>
#include <string>

#include "model/json.h"
#include "os/memory_cgroup.h"

namespace cohort::agent {

// What spec.json's "memory" says: {"limit_bytes": N, "cgroup_version": 1 or 2, "cgroup_parent":
// DIR}. Written by the agent only where it enforces the limit.
struct TaskMemorySpec {
  int64_t limit_bytes = 0;
  CgroupVersion version = CgroupVersion::kV1;
  std::string parent;
};
Json TaskMemoryJson(const TaskMemorySpec& spec);
// Nothing if the spec has no "memory"; throws on a malformed one, as ReadSpec's other fields do.
std::optional<TaskMemorySpec> TaskMemorySpecFrom(const Json& spec_doc);

class TaskMemoryLimit {
 public:
  // Makes the task's group under the agent's parent. Nothing, with `warning` set, if the kernel
  // refuses: the task then runs without a limit, as on a node that enforces none.
  static std::optional<TaskMemoryLimit> Prepare(const TaskMemorySpec& spec,
                                                const std::string& task_dir, std::string* warning);

  // Made before the fork, so that the child only has to open and write it: async-signal-safe.
  const char* join_file() const { return join_file_.c_str(); }
  // After every process of the task has ended: why it was killed, if the OOM killer did it, or
  // "". Removes the group.
  std::string Finish(bool main_killed_by_sigkill) const;

 private:
  TaskMemoryLimit(MemoryCgroup group, int64_t limit_bytes)
      : group_(std::move(group)), limit_bytes_(limit_bytes), join_file_(group_.JoinFile()) {}

  MemoryCgroup group_;
  int64_t limit_bytes_;
  std::string join_file_;
};

// Removes the groups whose supervisors have ended without removing them (killed): a group is
// named <task>-<supervisor pid>, and one that still holds a process is left alone. Returns how
// many it removed.
int RemoveLeftoverTaskGroups(const MemoryCgroups& parent);

// In the child, before it becomes the task's account: joins the group. False (errno set) if
// the kernel refuses.
bool JoinMemoryCgroup(const char* join_file);

}  // namespace cohort::agent
