#include "agent/nvml_gpu_sampler.h"

#include <utility>

#include "model/limits.h"

namespace cohort::agent {

StatusOr<std::unique_ptr<NvmlGpuSampler>> NvmlGpuSampler::Open(const std::string& library) {
  LibraryHandle handle = OpenLibrary(library);
  if (!handle) {
    return Status::Unavailable("cannot load NVML library " + library + ": " + LastDlError());
  }
  COHORT_ASSIGN_OR_RETURN(NvmlApi api, ResolveApi(handle.get(), library));
  if (nvmlReturn_t rc = api.init(); rc != NVML_SUCCESS) return CallFailed(api, "nvmlInit_v2", rc);
  return std::unique_ptr<NvmlGpuSampler>(new NvmlGpuSampler(std::move(handle), api));
}

NvmlGpuSampler::NvmlGpuSampler(LibraryHandle library, NvmlApi api)
    : library_(std::move(library)), api_(api) {}

NvmlGpuSampler::~NvmlGpuSampler() { api_.shutdown(); }

std::map<int, GpuSample> NvmlGpuSampler::Sample(Timestamp at) {
  std::map<int, GpuSample> out;
  unsigned int count = 0;
  if (api_.get_count(&count) != NVML_SUCCESS) return out;
  for (unsigned int index = 0; index < count; ++index) {
    GpuSample& sample = out[static_cast<int>(index)];
    sample.at = at;
    nvmlDevice_t device = nullptr;
    if (api_.get_handle_by_index(index, &device) != NVML_SUCCESS) continue;
    nvmlUtilization_t utilization{};
    // Over 100 would be a driver's error; better unknown than wrong.
    if (api_.get_utilization_rates != nullptr &&
        api_.get_utilization_rates(device, &utilization) == NVML_SUCCESS &&
        utilization.gpu <= 100) {
      sample.utilization_percent = static_cast<int>(utilization.gpu);
    }
    nvmlMemory_t memory{};
    // Beyond the protocol's bound, the master would refuse the whole report.
    if (api_.get_memory_info(device, &memory) == NVML_SUCCESS && memory.used <= memory.total &&
        memory.used <= static_cast<unsigned long long>(kMaxGpuMemoryBytes)) {
      sample.memory_used_bytes = static_cast<int64_t>(memory.used);
    }
  }
  return out;
}

}  // namespace cohort::agent
