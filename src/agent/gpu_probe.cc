#include "agent/gpu_probe.h"

#include <cstdio>
#include <string_view>
#include <utility>

namespace cohort::agent {
namespace {

// FNV-1a, written out because std::hash may differ between standard libraries and releases,
// and a declared GPU's UUID must not change when the agent is rebuilt.
uint64_t Fnv1a64(std::string_view data, uint64_t hash = 0xcbf29ce484222325ULL) {
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

// "GPU-" and 32 hex digits grouped 8-4-4-4-12, the shape of NVML's UUIDs, so that tools which
// parse GPU UUIDs accept declared GPUs too.
std::string DeclaredUuid(const std::string& node_name, int index) {
  // The NUL keeps ("node1", 1) and ("node", 11) apart.
  std::string key = node_name;
  key.push_back('\0');
  key += std::to_string(index);
  const uint64_t high = Fnv1a64(key);
  const uint64_t low = Fnv1a64(key, high ^ 0x9e3779b97f4a7c15ULL);
  char uuid[64];
  std::snprintf(uuid, sizeof(uuid), "GPU-%08x-%04x-%04x-%04x-%04x%08x",
                static_cast<unsigned>(high >> 32), static_cast<unsigned>((high >> 16) & 0xffff),
                static_cast<unsigned>(high & 0xffff), static_cast<unsigned>(low >> 48),
                static_cast<unsigned>((low >> 32) & 0xffff), static_cast<unsigned>(low));
  return uuid;
}

}  // namespace

DeclaredGpuProbe::DeclaredGpuProbe(std::string node_name, int count, std::string model,
                                   int64_t memory_bytes)
    : node_name_(std::move(node_name)),
      count_(count),
      model_(std::move(model)),
      memory_bytes_(memory_bytes) {}

StatusOr<GpuInventory> DeclaredGpuProbe::Probe() {
  if (count_ < 0) {
    return Status::InvalidArgument("declared GPU count must not be negative, got " +
                                   std::to_string(count_));
  }
  if (memory_bytes_ < 0) {
    return Status::InvalidArgument("declared GPU memory must not be negative, got " +
                                   std::to_string(memory_bytes_));
  }
  GpuInventory inventory;
  inventory.source = "declared";
  inventory.gpus.reserve(count_);
  for (int index = 0; index < count_; ++index) {
    Gpu gpu;
    gpu.index = index;
    gpu.uuid = DeclaredUuid(node_name_, index);
    gpu.model = model_;
    gpu.memory_bytes = memory_bytes_;
    char bus_id[32];
    std::snprintf(bus_id, sizeof(bus_id), "00000000:%02X:00.0", index + 1);
    gpu.pci_bus_id = bus_id;
    gpu.numa_node = 0;
    inventory.gpus.push_back(std::move(gpu));
  }
  for (int a = 0; a < count_; ++a) {
    for (int b = a + 1; b < count_; ++b) {
      inventory.links.push_back(GpuLink{a, b, GpuLinkType::kPcieHostBridge, 0});
    }
  }
  return inventory;
}

}  // namespace cohort::agent
