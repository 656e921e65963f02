// The node's container runtime (`cohortd agent --runtime`, docs/runtimes.md): Debian's podman,
// rootful, with the OCI runtime that works on the node's cgroup layout, and the limits its
// containers get. The agent finds it once, at start, and gives each task in an image its
// ContainerTask (container_task.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/container_task.h"
#include "common/status.h"
#include "model/agent_protocol.h"

namespace cohort::agent {

struct ContainerRuntime {
  std::string podman;       // absolute path
  std::string oci_runtime;  // "runc" or "crun"
  // The limits inside every container: podman's defaults (the host's maximum) were refused by
  // runc and crun in sandboxes whose kernels cap them lower, so the agent always says them.
  int64_t nofile = 0;
  int64_t nproc = 0;
  // The prefix of a GPU's device node, its index appended: /dev/nvidia (--gpu-device-prefix, for
  // fake GPUs in tests).
  std::string gpu_device_prefix = "/dev/nvidia";
  // The node's image cache (agent/image_cache.h): <agent data>/images, and its bound
  // (--image-cache-size; 0: none).
  std::string cache_dir;
  int64_t cache_bytes = 0;
};

// The default RLIMIT_NPROC of containers (--container-nproc): 4,096 processes and threads of the
// job's account. Higher limits were refused by both runtimes on these build machines.
inline constexpr int64_t kDefaultContainerNproc = 4096;

// How the node's cgroups are mounted: crun refuses the hybrid layout (v1 controllers with a v2
// hierarchy beside them), which runc handles.
enum class CgroupLayout { kUnified, kLegacy, kHybrid };
CgroupLayout DetectCgroupLayout(const std::string& sys_fs_cgroup = "/sys/fs/cgroup");

// The runtime for `mode` ("podman": required; "auto": podman where it is installed; "none"),
// with `oci_runtime` ("auto", "runc" or "crun") resolved for the node's cgroups, and the limits.
// None for "none", or "auto" without podman; kFailedPrecondition says what to install.
StatusOr<std::optional<ContainerRuntime>> FindContainerRuntime(std::string_view mode,
                                                               std::string_view oci_runtime,
                                                               int64_t nproc);

// Everything about one launch's container: its mounts (the task's directory, the job's
// directories, the dataset cache, an absolute workdir) at the same paths, and its GPUs' device
// nodes with NVIDIA's control nodes where they exist. `job_dirs` as the agent prepared them.
ContainerTask ContainerTaskFor(const ContainerRuntime& runtime, const std::string& instance,
                               const TaskLaunch& launch, const std::string& task_dir,
                               const std::vector<std::string>& job_dirs,
                               const std::string& dataset_cache_dir);

// CUDA_VISIBLE_DEVICES inside a container: the GPUs' UUIDs, which mean the same GPU whatever the
// numbering in the container (its device nodes are only the task's). Indices where a GPU's
// UUID is not known.
std::string ContainerVisibleDevices(const std::vector<int>& gpus,
                                    const std::vector<Gpu>& node_gpus);

}  // namespace cohort::agent
