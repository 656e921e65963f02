#include "agent/nvml_api.h"

#include <dlfcn.h>

#include <utility>

namespace cohort::agent {
namespace {

template <typename Function>
void Resolve(void* library, const char* symbol, Function*& function) {
  function = reinterpret_cast<Function*>(dlsym(library, symbol));
}

}  // namespace

void LibraryCloser::operator()(void* handle) const { dlclose(handle); }

std::string LastDlError() {
  const char* error = dlerror();
  return error != nullptr ? error : "unknown error";
}

LibraryHandle OpenLibrary(const std::string& library) {
  dlerror();  // a stale message from an earlier call would be misreported as ours
  return LibraryHandle(dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL));
}

StatusOr<NvmlApi> ResolveApi(void* library, const std::string& library_name) {
  NvmlApi api;
  Resolve(library, "nvmlInit_v2", api.init);
  Resolve(library, "nvmlShutdown", api.shutdown);
  Resolve(library, "nvmlErrorString", api.error_string);
  Resolve(library, "nvmlDeviceGetCount_v2", api.get_count);
  Resolve(library, "nvmlDeviceGetHandleByIndex_v2", api.get_handle_by_index);
  Resolve(library, "nvmlDeviceGetName", api.get_name);
  Resolve(library, "nvmlDeviceGetUUID", api.get_uuid);
  Resolve(library, "nvmlDeviceGetMemoryInfo", api.get_memory_info);
  const std::pair<const char*, bool> required[] = {
      {"nvmlInit_v2", api.init != nullptr},
      {"nvmlShutdown", api.shutdown != nullptr},
      {"nvmlErrorString", api.error_string != nullptr},
      {"nvmlDeviceGetCount_v2", api.get_count != nullptr},
      {"nvmlDeviceGetHandleByIndex_v2", api.get_handle_by_index != nullptr},
      {"nvmlDeviceGetName", api.get_name != nullptr},
      {"nvmlDeviceGetUUID", api.get_uuid != nullptr},
      {"nvmlDeviceGetMemoryInfo", api.get_memory_info != nullptr},
  };
  for (const auto& [symbol, found] : required) {
    if (!found) {
      return Status::Unavailable(library_name + " does not provide " + symbol +
                                 "; the NVIDIA driver is too old or the library is not NVML");
    }
  }
  Resolve(library, "nvmlDeviceGetPciInfo_v3", api.get_pci_info);
  Resolve(library, "nvmlDeviceGetTopologyCommonAncestor", api.get_topology_common_ancestor);
  Resolve(library, "nvmlDeviceGetNvLinkState", api.get_nvlink_state);
  Resolve(library, "nvmlDeviceGetNvLinkRemotePciInfo_v2", api.get_nvlink_remote_pci_info);
  Resolve(library, "nvmlDeviceGetNumaNodeId", api.get_numa_node_id);
  Resolve(library, "nvmlDeviceGetUtilizationRates", api.get_utilization_rates);
  return api;
}

Status CallFailed(const NvmlApi& api, const std::string& function, nvmlReturn_t code) {
  const char* text = api.error_string(code);
  return Status::Unavailable(
      function + " failed: " + (text != nullptr ? text : "error " + std::to_string(code)));
}

std::string FromBuffer(const char* buffer, size_t size) {
  size_t length = 0;
  while (length < size && buffer[length] != '\0') ++length;
  return std::string(buffer, length);
}

}  // namespace cohort::agent
