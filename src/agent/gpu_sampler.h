// How busy each GPU of the machine is, sampled every few seconds by the agent
// (docs/observability.md, "GPU and host metrics"): NVML's utilization.gpu and the memory in use.
// A figure that cannot be read is absent, never made up: declared GPUs (--gpus N) have none.
#pragma once

#include <map>

#include "common/time.h"
#include "model/resource_samples.h"

namespace cohort::agent {

class GpuSampler {
 public:
  virtual ~GpuSampler() = default;
  // One sample per GPU, by index, stamped `at`; what a GPU could not tell is absent in its
  // sample. Never fails: a driver that stops answering gives samples with nothing known.
  virtual std::map<int, GpuSample> Sample(Timestamp at) = 0;
};

// GPUs declared on the command line: there is nothing to read, so nothing is known.
class DeclaredGpuSampler final : public GpuSampler {
 public:
  explicit DeclaredGpuSampler(int count) : count_(count) {}
  std::map<int, GpuSample> Sample(Timestamp at) override;

 private:
  int count_;
};

}  // namespace cohort::agent
