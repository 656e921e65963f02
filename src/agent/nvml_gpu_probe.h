// The GPU probe for machines with an NVIDIA driver. libnvidia-ml is opened with dlopen at run
// time rather than linked, so that one agent binary runs on machines with and without a driver,
// and builds where no NVIDIA header or library is installed.
#pragma once

#include <string>

#include "agent/gpu_probe.h"

namespace cohort::agent {

class NvmlGpuProbe final : public GpuProbe {
 public:
  // `library` is what dlopen receives: a soname searched on the usual paths, or a file path
  // (tests point it at a fake library).
  explicit NvmlGpuProbe(std::string library = "libnvidia-ml.so.1");

  // Opens the library, initialises NVML, reads every GPU and how each pair is connected, and
  // shuts NVML down and closes the library again: a probe holds nothing between calls.
  StatusOr<GpuInventory> Probe() override;

  // True if `library` can be opened and looks like NVML; says nothing about whether the driver
  // works (Probe reports that). Lets the agent choose between NVML and declared GPUs.
  static bool LibraryLoadable(const std::string& library);

 private:
  std::string library_;
};

}  // namespace cohort::agent
