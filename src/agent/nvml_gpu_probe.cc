#include "agent/nvml_gpu_probe.h"

#include <dlfcn.h>
#include <strings.h>

#include <array>
#include <climits>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "agent/nvml_api.h"

namespace cohort::agent {
namespace {

// Every successful nvmlInit_v2 takes a reference inside the driver's library; it must be given
// back even when reading a GPU fails halfway, or the library stays initialised in the agent.
class NvmlSession {
 public:
  explicit NvmlSession(const NvmlApi& api) : api_(api) {}
  ~NvmlSession() { api_.shutdown(); }
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;

 private:
  const NvmlApi& api_;
};

// The kernel's view, for drivers whose NVML cannot tell the NUMA node. sysfs names devices with
// a 4-digit lowercase domain ("0000:17:00.0") where NVML writes 8 uppercase digits.
int SysfsNumaNode(const nvmlPciInfo_t& pci) {
  char path[96];
  std::snprintf(path, sizeof(path), "/sys/bus/pci/devices/%04x:%02x:%02x.0/numa_node", pci.domain,
                pci.bus, pci.device);
  std::ifstream file(path);
  int node = -1;
  if (!(file >> node) || node < 0) return -1;  // the kernel writes -1 when it does not know
  return node;
}

int NumaNode(const NvmlApi& api, nvmlDevice_t device, const std::optional<nvmlPciInfo_t>& pci) {
  if (api.get_numa_node_id != nullptr) {
    unsigned int node = 0;
    if (api.get_numa_node_id(device, &node) == NVML_SUCCESS && node <= INT_MAX) {
      return static_cast<int>(node);
    }
  }
  return pci.has_value() ? SysfsNumaNode(*pci) : -1;
}

std::optional<GpuLinkType> LinkTypeFromTopology(nvmlGpuTopologyLevel_t level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL:  // two GPUs on one board, joined by the board's own switch
    case NVML_TOPOLOGY_SINGLE:
    case NVML_TOPOLOGY_MULTIPLE:
      return GpuLinkType::kPcieSwitch;
    case NVML_TOPOLOGY_HOSTBRIDGE:
      return GpuLinkType::kPcieHostBridge;
    case NVML_TOPOLOGY_NODE:
    case NVML_TOPOLOGY_SYSTEM:
      return GpuLinkType::kSystem;
    default:
      return std::nullopt;  // a level newer than this code; better unsaid than wrong
  }
}

// nvlinks[a][b]: active NVLinks from GPU a whose far end is GPU b. Links that end elsewhere
// (an NVSwitch, a CPU) are not counted.
std::vector<std::vector<int>> CountNvLinks(const NvmlApi& api,
                                           const std::vector<nvmlDevice_t>& devices,
                                           const std::vector<nvmlPciInfo_t>& pci) {
  const size_t count = devices.size();
  std::vector<std::vector<int>> nvlinks(count, std::vector<int>(count, 0));
  if (api.get_nvlink_state == nullptr || api.get_nvlink_remote_pci_info == nullptr ||
      pci.size() != count) {
    return nvlinks;
  }
  for (size_t a = 0; a < count; ++a) {
    for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
      // Any failure means this GPU has no such link (GPUs have from 0 to 18).
      nvmlEnableState_t active = 0;
      if (api.get_nvlink_state(devices[a], link, &active) != NVML_SUCCESS ||
          active != NVML_FEATURE_ENABLED) {
        continue;
      }
      nvmlPciInfo_t remote{};
      if (api.get_nvlink_remote_pci_info(devices[a], link, &remote) != NVML_SUCCESS) continue;
      const std::string remote_bus_id = FromBuffer(remote.busId, sizeof(remote.busId));
      for (size_t b = 0; b < count; ++b) {
        if (b != a && strcasecmp(remote_bus_id.c_str(),
                                 FromBuffer(pci[b].busId, sizeof(pci[b].busId)).c_str()) == 0) {
          ++nvlinks[a][b];
          break;
        }
      }
    }
  }
  return nvlinks;
}

std::vector<GpuLink> ReadLinks(const NvmlApi& api, const std::vector<nvmlDevice_t>& devices,
                               const std::vector<nvmlPciInfo_t>& pci) {
  const std::vector<std::vector<int>> nvlinks = CountNvLinks(api, devices, pci);
  std::vector<GpuLink> links;
  const int count = static_cast<int>(devices.size());
  for (int a = 0; a < count; ++a) {
    for (int b = a + 1; b < count; ++b) {
      if (nvlinks[a][b] > 0) {
        links.push_back(GpuLink{a, b, GpuLinkType::kNvLink, nvlinks[a][b]});
        continue;
      }
      if (api.get_topology_common_ancestor == nullptr) continue;
      nvmlGpuTopologyLevel_t level = 0;
      if (api.get_topology_common_ancestor(devices[a], devices[b], &level) != NVML_SUCCESS) {
        continue;
      }
      if (std::optional<GpuLinkType> type = LinkTypeFromTopology(level)) {
        links.push_back(GpuLink{a, b, *type, 0});
      }
    }
  }
  return links;
}

// Reads everything between nvmlInit_v2 and nvmlShutdown.
StatusOr<GpuInventory> ReadInventory(const NvmlApi& api) {
  unsigned int count = 0;
  if (nvmlReturn_t rc = api.get_count(&count); rc != NVML_SUCCESS) {
    return CallFailed(api, "nvmlDeviceGetCount_v2", rc);
  }
  GpuInventory inventory;
  inventory.source = "nvml";
  std::vector<nvmlDevice_t> devices(count, nullptr);
  std::vector<nvmlPciInfo_t> pci;  // empty when the library cannot tell
  for (unsigned int index = 0; index < count; ++index) {
    const std::string which = " (GPU " + std::to_string(index) + ")";
    nvmlDevice_t device = nullptr;
    if (nvmlReturn_t rc = api.get_handle_by_index(index, &device); rc != NVML_SUCCESS) {
      return CallFailed(api, "nvmlDeviceGetHandleByIndex_v2" + which, rc);
    }
    devices[index] = device;

    std::array<char, kNameBufferSize> name{};
    if (nvmlReturn_t rc = api.get_name(device, name.data(), name.size()); rc != NVML_SUCCESS) {
      return CallFailed(api, "nvmlDeviceGetName" + which, rc);
    }
    std::array<char, kUuidBufferSize> uuid{};
    if (nvmlReturn_t rc = api.get_uuid(device, uuid.data(), uuid.size()); rc != NVML_SUCCESS) {
      return CallFailed(api, "nvmlDeviceGetUUID" + which, rc);
    }
    nvmlMemory_t memory{};
    if (nvmlReturn_t rc = api.get_memory_info(device, &memory); rc != NVML_SUCCESS) {
      return CallFailed(api, "nvmlDeviceGetMemoryInfo" + which, rc);
    }
    std::optional<nvmlPciInfo_t> device_pci;
    if (api.get_pci_info != nullptr) {
      nvmlPciInfo_t info{};
      if (nvmlReturn_t rc = api.get_pci_info(device, &info); rc != NVML_SUCCESS) {
        return CallFailed(api, "nvmlDeviceGetPciInfo_v3" + which, rc);
      }
      device_pci = info;
      pci.push_back(info);
    }

    Gpu gpu;
    gpu.index = static_cast<int>(index);
    gpu.uuid = FromBuffer(uuid.data(), uuid.size());
    gpu.model = FromBuffer(name.data(), name.size());
    gpu.memory_bytes = static_cast<int64_t>(memory.total);
    if (device_pci) gpu.pci_bus_id = FromBuffer(device_pci->busId, sizeof(device_pci->busId));
    gpu.numa_node = NumaNode(api, device, device_pci);
    inventory.gpus.push_back(std::move(gpu));
  }
  inventory.links = ReadLinks(api, devices, pci);
  return inventory;
}

}  // namespace

NvmlGpuProbe::NvmlGpuProbe(std::string library) : library_(std::move(library)) {}

StatusOr<GpuInventory> NvmlGpuProbe::Probe() {
  LibraryHandle library = OpenLibrary(library_);
  if (!library) {
    return Status::Unavailable("cannot load NVML library " + library_ + ": " + LastDlError());
  }
  COHORT_ASSIGN_OR_RETURN(const NvmlApi api, ResolveApi(library.get(), library_));
  if (nvmlReturn_t rc = api.init(); rc != NVML_SUCCESS) return CallFailed(api, "nvmlInit_v2", rc);
  // Declared after `library`, so NVML is shut down before its library is closed.
  NvmlSession session(api);
  return ReadInventory(api);
}

bool NvmlGpuProbe::LibraryLoadable(const std::string& library) {
  LibraryHandle handle = OpenLibrary(library);
  return handle != nullptr && dlsym(handle.get(), "nvmlInit_v2") != nullptr;
}

}  // namespace cohort::agent
