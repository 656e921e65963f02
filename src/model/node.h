// What an agent reports about its machine, and what the master knows of each node.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/enum_names.h"
#include "common/time.h"
#include "model/resources.h"

namespace cohort {

struct Gpu {
  int index = 0;  // NVML / PCI bus order, as CUDA_VISIBLE_DEVICES counts with PCI_BUS_ID order
  std::string uuid;
  std::string model;
  int64_t memory_bytes = 0;
  std::string pci_bus_id;
  int numa_node = -1;  // -1: unknown
};

// How two GPUs of a node reach each other, fastest first (NVML's topology levels).
enum class GpuLinkType { kNvLink, kPcieSwitch, kPcieHostBridge, kSystem };
inline constexpr auto kGpuLinkTypeNames = std::to_array<EnumName<GpuLinkType>>({
    {GpuLinkType::kNvLink, "nvlink"},
    {GpuLinkType::kPcieSwitch, "pcie-switch"},
    {GpuLinkType::kPcieHostBridge, "pcie-host-bridge"},
    {GpuLinkType::kSystem, "system"},
});
const char* GpuLinkTypeName(GpuLinkType t);
std::optional<GpuLinkType> ParseGpuLinkType(std::string_view name);

struct GpuLink {
  int a = 0;
  int b = 0;
  GpuLinkType type = GpuLinkType::kSystem;
  int nvlinks = 0;  // number of NVLink lanes between a and b, for kNvLink
};

// A node's GPUs grouped by how closely they are connected, finest first: levels[0] groups GPUs
// joined by NVLink, levels[1] those joined by a PCIe switch or better, levels[2] by a host
// bridge (one CPU socket) or better. Within a level every GPU is in exactly one group.
struct GpuTopology {
  std::vector<std::vector<std::vector<int>>> levels;
};

struct PortRange {
  int first = 30000;
  int last = 30999;
};

struct NodeInfo {
  std::string id;       // unique name, e.g. the host name
  std::string address;  // how tasks on other nodes reach this node
  int64_t milli_cpus = 0;
  int64_t memory_bytes = 0;
  std::vector<Gpu> gpus;
  std::vector<GpuLink> gpu_links;
  std::string gpu_source;  // "nvml" or "declared"
  PortRange ports;
  std::map<std::string, std::string> labels;
  std::string agent_version;

  // The model of its GPUs ("" without GPUs; the first GPU's when they differ).
  std::string GpuModel() const { return gpus.empty() ? "" : gpus.front().model; }
  GpuTopology Topology() const;

  Resources Capacity() const {
    return Resources{static_cast<int64_t>(gpus.size()), milli_cpus, memory_bytes};
  }
};

// READY: synced recently. UNREACHABLE: missed its heartbeats (or the master just restarted and
// has not heard from it yet); its tasks are left alone and nothing new is placed there.
enum class NodeState { kReady, kUnreachable };
inline constexpr auto kNodeStateNames = std::to_array<EnumName<NodeState>>({
    {NodeState::kReady, "READY"},
    {NodeState::kUnreachable, "UNREACHABLE"},
});
const char* NodeStateName(NodeState s);

struct Node {
  NodeInfo info;
  NodeState state = NodeState::kUnreachable;
  Timestamp registered_at;
  Timestamp last_seen;
};

}  // namespace cohort
