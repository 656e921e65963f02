// A task's memory request as its limit, through the kernel's memory controller: the one place
// that knows the cgroup file systems (docs/job-spec.md, "resources"; docs/reliability.md).
//
// Two layouts enforce it:
//   - cgroup v1 with the memory controller mounted (a hybrid layout's /sys/fs/cgroup/memory):
//     memory.limit_in_bytes, and memory.memsw.limit_in_bytes set to the same where swap is
//     accounted, so that swapping does not stretch the limit; memory.oom_control counts OOM kills.
//   - cgroup v2 with the memory controller available at the mount's root (a plain server's
//     /sys/fs/cgroup, run as root on the host): memory.max and memory.swap.max=0 where it exists;
//     memory.events counts OOM kills.
// Task groups live in "cohort/" under the mount's root. Anywhere else (not root, no memory
// controller, a v2 root that holds processes and cannot delegate, as inside most containers)
// nothing is enforced, and Find says why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace cohort {

enum class CgroupVersion { kV1 = 1, kV2 = 2 };

// Where the memory controller is mounted, as /proc/self/mountinfo says.
struct MemoryControllerMount {
  CgroupVersion version = CgroupVersion::kV1;
  std::string mount_point;
};

// From the text of /proc/self/mountinfo: a cgroup v1 hierarchy with the memory controller
// first (a hybrid layout's v2 mount has no controllers), else every cgroup2 mount, whose
// controllers the caller must still check. Pure, for tests.
std::optional<MemoryControllerMount> FindMemoryMount(std::string_view mountinfo,
                                                     bool (*v2_has_memory)(const std::string&));

// The parent of the task groups, ready to use.
class MemoryCgroups {
 public:
  // Finds the memory controller of this machine and makes `cohort/` under it, ready for task
  // groups; kFailedPrecondition saying why not (the caller runs tasks unlimited).
  static StatusOr<MemoryCgroups> Find(const std::string& mountinfo_path = "/proc/self/mountinfo");
  // A parent that Find made earlier (spec.json carries it from the agent to the supervisor).
  MemoryCgroups(CgroupVersion version, std::string parent)
      : version_(version), parent_(std::move(parent)) {}

  CgroupVersion version() const { return version_; }
  const std::string& parent() const { return parent_; }
  // "cgroup v1 (/sys/fs/cgroup/memory/cohort)"
  std::string Describe() const;

 private:
  CgroupVersion version_;
  std::string parent_;
};

// One task's group. Made before the task starts, its processes join it (JoinFile), and it is
// removed once every one of them has ended.
class MemoryCgroup {
 public:
  // Makes (or reuses, empty) the group `name` under `parent` with this limit; kInternal if the
  // kernel refuses.
  static StatusOr<MemoryCgroup> Create(const MemoryCgroups& parent, const std::string& name,
                                       int64_t limit_bytes);

  // The group `name` under `parent` as it is, to read or remove (one a crashed supervisor left).
  static MemoryCgroup Existing(const MemoryCgroups& parent, const std::string& name) {
    return MemoryCgroup(parent.version(), parent.parent() + "/" + name);
  }

  // The file to which a process writes "0" to join the group (cgroup.procs).
  std::string JoinFile() const { return path_ + "/cgroup.procs"; }
  const std::string& path() const { return path_; }
  // How many times the kernel's OOM killer killed a process of the group; nothing if the kernel
  // does not say (v1 before Linux 4.13).
  std::optional<int64_t> OomKills() const;
  // Removes the group, which must hold no process any more.
  Status Remove() const;

 private:
  MemoryCgroup(CgroupVersion version, std::string path)
      : version_(version), path_(std::move(path)) {}

  CgroupVersion version_;
  std::string path_;
};

// "64 MiB", "1.5 GiB": a limit as a person reads it.
std::string MemoryText(int64_t bytes);

}  // namespace cohort
