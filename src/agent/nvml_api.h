// The slice of NVML's C ABI that the agent uses (the GPU probe and the GPU sampler), declared
// here because no NVIDIA header is installed where Cohort builds, and the library that provides
// it, opened with dlopen at run time. Layouts and values follow nvml.h, whose ABI the driver
// keeps stable (that is what the _v2/_v3 suffixes of the symbols are for). NVML's enums are C
// enums, hence int.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"

namespace cohort::agent {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlGpuTopologyLevel_t = int;
using nvmlEnableState_t = int;

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlUtilization_t {
  unsigned int gpu;     // percent of the last sample period in which a kernel ran
  unsigned int memory;  // percent of it in which device memory was read or written
};

struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlEnableState_t NVML_FEATURE_ENABLED = 1;

constexpr nvmlGpuTopologyLevel_t NVML_TOPOLOGY_INTERNAL = 0;
constexpr nvmlGpuTopologyLevel_t NVML_TOPOLOGY_SINGLE = 10;
constexpr nvmlGpuTopologyLevel_t NVML_TOPOLOGY_MULTIPLE = 20;
constexpr nvmlGpuTopologyLevel_t NVML_TOPOLOGY_HOSTBRIDGE = 30;
constexpr nvmlGpuTopologyLevel_t NVML_TOPOLOGY_NODE = 40;
constexpr nvmlGpuTopologyLevel_t NVML_TOPOLOGY_SYSTEM = 50;

constexpr unsigned int NVML_NVLINK_MAX_LINKS = 18;
// NVML_DEVICE_NAME_V2_BUFFER_SIZE and NVML_DEVICE_UUID_V2_BUFFER_SIZE.
constexpr unsigned int kNameBufferSize = 96;
constexpr unsigned int kUuidBufferSize = 96;

// Entry points, resolved with dlsym. The optional ones are null when the library predates them;
// callers then report less rather than failing.
struct NvmlApi {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*get_count)(unsigned int*) = nullptr;
  nvmlReturn_t (*get_handle_by_index)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*get_name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*get_uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*get_memory_info)(nvmlDevice_t, nvmlMemory_t*) = nullptr;

  nvmlReturn_t (*get_pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*get_topology_common_ancestor)(nvmlDevice_t, nvmlDevice_t,
                                               nvmlGpuTopologyLevel_t*) = nullptr;
  nvmlReturn_t (*get_nvlink_state)(nvmlDevice_t, unsigned int, nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*get_nvlink_remote_pci_info)(nvmlDevice_t, unsigned int, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*get_numa_node_id)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*get_utilization_rates)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
};

struct LibraryCloser {
  void operator()(void* handle) const;
};
using LibraryHandle = std::unique_ptr<void, LibraryCloser>;

// dlopen(library) with RTLD_NOW | RTLD_LOCAL; null on failure (LastDlError says why).
LibraryHandle OpenLibrary(const std::string& library);
std::string LastDlError();

// Resolves every entry point; Unavailable, naming the symbol, if a required one is missing.
StatusOr<NvmlApi> ResolveApi(void* library, const std::string& library_name);

// Unavailable: "<function> failed: <NVML's words for code>".
Status CallFailed(const NvmlApi& api, const std::string& function, nvmlReturn_t code);

// NVML fills fixed-size buffers; a driver that fills one to the brim leaves no terminator.
std::string FromBuffer(const char* buffer, size_t size);

}  // namespace cohort::agent
