// The GPU sampler for machines with an NVIDIA driver. Unlike the probe, which holds nothing
// between calls, it keeps the library open and NVML initialised for its whole life: it reads
// every few seconds, and nvmlInit can take a second where the driver is not kept loaded.
#pragma once

#include <memory>
#include <string>

#include "agent/gpu_sampler.h"
#include "agent/nvml_api.h"
#include "common/status.h"

namespace cohort::agent {

class NvmlGpuSampler final : public GpuSampler {
 public:
  // Opens `library` (as NvmlGpuProbe does) and initialises NVML. Unavailable if either fails.
  // A library without nvmlDeviceGetUtilizationRates is taken: its GPUs' utilisation is unknown.
  static StatusOr<std::unique_ptr<NvmlGpuSampler>> Open(const std::string& library);
  ~NvmlGpuSampler() override;
  NvmlGpuSampler(const NvmlGpuSampler&) = delete;
  NvmlGpuSampler& operator=(const NvmlGpuSampler&) = delete;

  // Every GPU NVML counts now; a call that fails leaves its figure unknown.
  std::map<int, GpuSample> Sample(Timestamp at) override;

 private:
  NvmlGpuSampler(LibraryHandle library, NvmlApi api);

  LibraryHandle library_;  // closed after NVML is shut down (the destructor)
  NvmlApi api_;
};

}  // namespace cohort::agent
