#include "os/memory_cgroup.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/strings.h"
#include "os/process.h"

namespace cohort {
namespace {

constexpr const char* kParentName = "cohort";

std::vector<std::string> Words(std::string_view line) {
  std::vector<std::string> out;
  for (const std::string& w : Split(std::string(line), ' ')) {
    if (!w.empty()) out.push_back(w);
  }
  return out;
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// Writes `value` to a control file; the kernel answers a bad value with the write's error.
Status WriteControl(const std::string& path, const std::string& value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::Internal(fmt::format("cannot open {}: {}", path, strerror(errno)));
  ssize_t n = ::write(fd, value.data(), value.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    return Status::Internal(fmt::format("cannot write {} to {}: {}", value, path, strerror(err)));
  }
  return Status::Ok();
}

Status MakeDirectory(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::Internal(fmt::format("cannot create {}: {}", path, strerror(errno)));
  }
  return Status::Ok();
}

bool ListsMemory(const std::string& controllers_file) {
  for (const std::string& c : Words(Trim(ReadFileOrEmpty(controllers_file)))) {
    if (c == "memory") return true;
  }
  return false;
}

bool V2HasMemory(const std::string& mount_point) {
  return ListsMemory(mount_point + "/cgroup.controllers");
}

// The value of `key` in a flat keyed file ("oom_kill 3"); nothing if the key is not there.
std::optional<int64_t> KeyedValue(const std::string& path, std::string_view key) {
  for (const std::string& line : Split(ReadFileOrEmpty(path), '\n')) {
    std::vector<std::string> w = Words(line);
    if (w.size() == 2 && w[0] == key) return ParseInteger(w[1], 0, INT64_MAX);
  }
  return std::nullopt;
}

}  // namespace

std::optional<MemoryControllerMount> FindMemoryMount(std::string_view mountinfo,
                                                     bool (*v2_has_memory)(const std::string&)) {
  std::optional<MemoryControllerMount> v2;
  for (const std::string& line : Split(std::string(mountinfo), '\n')) {
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    std::vector<std::string> w = Words(line);
    size_t dash = 0;
    while (dash < w.size() && w[dash] != "-") ++dash;
    if (dash < 5 || dash + 3 > w.size()) continue;
    const std::string& mount_point = w[4];
    const std::string& fstype = w[dash + 1];
    if (fstype == "cgroup") {
      const std::string options = dash + 3 < w.size() ? w[dash + 3] : "";
      for (const std::string& o : Split(options, ',')) {
        if (o == "memory") return MemoryControllerMount{CgroupVersion::kV1, mount_point};
      }
    } else if (fstype == "cgroup2" && !v2 && v2_has_memory(mount_point)) {
      v2 = MemoryControllerMount{CgroupVersion::kV2, mount_point};
    }
  }
  return v2;
}

StatusOr<MemoryCgroups> MemoryCgroups::Find(const std::string& mountinfo_path) {
  if (::geteuid() != 0) {
    return Status::FailedPrecondition("the agent is not root, and cannot create cgroups");
  }
  std::string mountinfo = ReadFileOrEmpty(mountinfo_path);
  auto mount = FindMemoryMount(mountinfo, V2HasMemory);
  if (!mount) {
    return Status::FailedPrecondition(
        "no memory controller is mounted (neither cgroup v1's memory nor cgroup v2 with memory "
        "in cgroup.controllers)");
  }
  std::string parent = mount->mount_point + "/" + kParentName;
  if (mount->version == CgroupVersion::kV2) {
    // The controller must be handed down twice: to cohort/, then to the task groups in it. A
    // root that holds processes (a container's namespace) refuses the first: nothing to do.
    if (Status s = WriteControl(mount->mount_point + "/cgroup.subtree_control", "+memory");
        !s.ok()) {
      return Status::FailedPrecondition(
          fmt::format("cgroup v2 at {} does not delegate its memory controller: {}",
                      mount->mount_point, s.message()));
    }
    COHORT_RETURN_IF_ERROR(MakeDirectory(parent));
    if (Status s = WriteControl(parent + "/cgroup.subtree_control", "+memory"); !s.ok()) {
      return Status::FailedPrecondition(s.message());
    }
  } else {
    if (Status s = MakeDirectory(parent); !s.ok()) {
      return Status::FailedPrecondition(s.message());
    }
  }
  return MemoryCgroups(mount->version, parent);
}

std::string MemoryCgroups::Describe() const {
  return fmt::format("cgroup v{} ({})", static_cast<int>(version_), parent_);
}

StatusOr<MemoryCgroup> MemoryCgroup::Create(const MemoryCgroups& parent, const std::string& name,
                                            int64_t limit_bytes) {
  if (name.empty() || name.find('/') != std::string::npos || name[0] == '.') {
    return Status::InvalidArgument(fmt::format("\"{}\" is not a cgroup name", name));
  }
  MemoryCgroup group(parent.version(), parent.parent() + "/" + name);
  COHORT_RETURN_IF_ERROR(MakeDirectory(group.path_));
  const std::string limit = std::to_string(limit_bytes);
  Status set = Status::Ok();
  if (parent.version() == CgroupVersion::kV1) {
    set = WriteControl(group.path_ + "/memory.limit_in_bytes", limit);
    // With swap accounted, the limit covers memory and swap together; without, there is none
    // to stretch it.
    const std::string memsw = group.path_ + "/memory.memsw.limit_in_bytes";
    if (set.ok() && Exists(memsw)) set = WriteControl(memsw, limit);
  } else {
    set = WriteControl(group.path_ + "/memory.max", limit);
    const std::string swap = group.path_ + "/memory.swap.max";
    if (set.ok() && Exists(swap)) set = WriteControl(swap, "0");
  }
  if (!set.ok()) {
    (void)group.Remove();
    return set;
  }
  return group;
}

std::optional<int64_t> MemoryCgroup::OomKills() const {
  return version_ == CgroupVersion::kV1 ? KeyedValue(path_ + "/memory.oom_control", "oom_kill")
                                        : KeyedValue(path_ + "/memory.events", "oom_kill");
}

Status MemoryCgroup::Remove() const {
  // The kernel lets a group go a moment after its last process is reaped.
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (::rmdir(path_.c_str()) == 0 || errno == ENOENT) return Status::Ok();
    if (errno != EBUSY) break;
    ::usleep(10'000);
  }
  return Status::Internal(fmt::format("cannot remove {}: {}", path_, strerror(errno)));
}

std::string MemoryText(int64_t bytes) {
  constexpr int64_t kKiB = 1024, kMiB = kKiB << 10, kGiB = kMiB << 10;
  auto text = [&](int64_t unit, const char* name) {
    if (bytes % unit == 0) return fmt::format("{} {}", bytes / unit, name);
    return fmt::format("{:.1f} {}", static_cast<double>(bytes) / static_cast<double>(unit), name);
  };
  if (bytes >= kGiB) return text(kGiB, "GiB");
  if (bytes >= kMiB) return text(kMiB, "MiB");
  if (bytes >= kKiB) return text(kKiB, "KiB");
  return fmt::format("{} bytes", bytes);
}

}  // namespace cohort
