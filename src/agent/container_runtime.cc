#include "agent/container_runtime.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>

#include "common/strings.h"
#include "os/file_limit.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;

constexpr long kCgroup2Magic = 0x63677270;

std::optional<std::string> OnPath(std::string_view program) {
  const char* path = ::getenv("PATH");
  for (const std::string& dir : Split(path ? path : "/usr/sbin:/usr/bin:/sbin:/bin", ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + std::string(program);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

CgroupLayout DetectCgroupLayout(const std::string& sys_fs_cgroup) {
  struct statfs st;
  if (::statfs(sys_fs_cgroup.c_str(), &st) == 0 && st.f_type == kCgroup2Magic) {
    return CgroupLayout::kUnified;
  }
  return Exists(sys_fs_cgroup + "/unified") ? CgroupLayout::kHybrid : CgroupLayout::kLegacy;
}

StatusOr<std::optional<ContainerRuntime>> FindContainerRuntime(std::string_view mode,
                                                               std::string_view oci_runtime,
                                                               int64_t nproc) {
  if (mode == "none") return std::optional<ContainerRuntime>();
  if (mode != "auto" && mode != "podman") {
    return Status::InvalidArgument(
        fmt::format("--runtime: \"{}\" is not a runtime; use podman, auto or none", mode));
  }
  if (oci_runtime != "auto" && oci_runtime != "runc" && oci_runtime != "crun") {
    return Status::InvalidArgument(
        fmt::format("--oci-runtime: \"{}\" is not one; use runc, crun or auto", oci_runtime));
  }
  if (::geteuid() != 0) {
    if (mode == "auto") return std::optional<ContainerRuntime>();
    return Status::FailedPrecondition(
        "--runtime podman: the agent must run as root: its tasks' containers are rootful podman's, "
        "run as each job's user inside");
  }
  auto podman = OnPath("podman");
  if (!podman) {
    if (mode == "auto") return std::optional<ContainerRuntime>();
    return Status::FailedPrecondition(
        "--runtime podman: podman is not installed (apt-get install podman runc catatonit)");
  }
  ContainerRuntime runtime;
  runtime.podman = *podman;
  std::string chosen(oci_runtime);
  if (chosen == "auto") {
    // crun is podman's choice where cgroups are unified; it refuses the hybrid layout, and runc is
    // the one of the two that handles every layout.
    bool unified = DetectCgroupLayout() == CgroupLayout::kUnified;
    bool has_crun = OnPath("crun").has_value();
    bool has_runc = OnPath("runc").has_value();
    chosen = (unified && has_crun) || !has_runc ? "crun" : "runc";
  }
  if (!OnPath(chosen)) {
    return Status::FailedPrecondition(
        fmt::format("--runtime podman: its OCI runtime {} is not installed (apt-get install {})",
                    chosen, chosen));
  }
  runtime.oci_runtime = chosen;
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  runtime.nofile = files.rlim_max == RLIM_INFINITY
                       ? kMaxOpenFiles
                       : std::min<int64_t>(static_cast<int64_t>(files.rlim_max), kMaxOpenFiles);
  runtime.nproc = nproc;
  return std::optional(runtime);
}

ContainerTask ContainerTaskFor(const ContainerRuntime& runtime, const std::string& instance,
                               const TaskLaunch& launch, const std::string& task_dir,
                               const std::vector<std::string>& job_dirs,
                               const std::string& dataset_cache_dir) {
  ContainerTask c;
  c.podman = runtime.podman;
  c.oci_runtime = runtime.oci_runtime;
  c.image = launch.image;
  c.insecure = launch.image_insecure;
  c.name = ContainerNameOf(instance, launch.id.ToString());
  c.nofile = runtime.nofile;
  c.nproc = runtime.nproc;
  c.memory_bytes = launch.memory_limit_bytes;
  c.cache_dir = runtime.cache_dir;
  c.cache_bytes = runtime.cache_bytes;
  c.mounts.push_back(ContainerMount{task_dir, false});
  for (const auto& d : job_dirs) c.mounts.push_back(ContainerMount{d, false});
  // Dataset versions are links from the task's data directory into the node's cache.
  if (!launch.datasets.empty()) c.mounts.push_back(ContainerMount{dataset_cache_dir, true});
  if (!launch.workdir.empty() && launch.workdir[0] == '/') {
    c.mounts.push_back(ContainerMount{launch.workdir, false});
  }
  for (int gpu : launch.gpus) {
    std::string node = runtime.gpu_device_prefix + std::to_string(gpu);
    if (Exists(node)) c.devices.push_back(node);
  }
  if (!launch.gpus.empty()) {
    for (const char* control :
         {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"}) {
      if (Exists(control)) c.devices.push_back(control);
    }
  }
  return c;
}

std::string ContainerVisibleDevices(const std::vector<int>& gpus,
                                    const std::vector<Gpu>& node_gpus) {
  std::vector<std::string> ids;
  for (int index : gpus) {
    std::string id = std::to_string(index);
    for (const Gpu& g : node_gpus) {
      if (g.index == index && !g.uuid.empty()) id = g.uuid;
    }
    ids.push_back(id);
  }
  return Join(ids, ",");
}

}  // namespace cohort::agent
