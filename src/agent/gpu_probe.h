// Where an agent learns which GPUs its machine has: NVML when the driver's library is present,
// otherwise GPUs declared on the command line (machines without GPUs, tests, demos).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/node.h"

namespace cohort::agent {

struct GpuInventory {
  std::vector<Gpu> gpus;       // ascending index
  std::vector<GpuLink> links;  // one entry per unordered pair (a < b) that NVML describes
  std::string source;          // "nvml" or "declared"
};

class GpuProbe {
 public:
  virtual ~GpuProbe() = default;
  // Unavailable if the GPUs cannot be read (driver missing or failing); never crashes.
  virtual StatusOr<GpuInventory> Probe() = 0;
};

// `count` GPUs of one model, all on one PCIe host bridge, with made-up UUIDs that are stable
// for a given node name.
class DeclaredGpuProbe final : public GpuProbe {
 public:
  DeclaredGpuProbe(std::string node_name, int count, std::string model, int64_t memory_bytes);
  StatusOr<GpuInventory> Probe() override;

 private:
  std::string node_name_;
  int count_;
  std::string model_;
  int64_t memory_bytes_;
};

}  // namespace cohort::agent
