#include "agent/gpu_sampler.h"

namespace cohort::agent {

std::map<int, GpuSample> DeclaredGpuSampler::Sample(Timestamp at) {
  std::map<int, GpuSample> out;
  for (int index = 0; index < count_; ++index) out[index] = GpuSample{at, {}, {}};
  return out;
}

}  // namespace cohort::agent
