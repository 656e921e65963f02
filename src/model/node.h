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

// The label an agent that runs tasks in containers gives its node (`cohortd agent --runtime`):
// its value names the runtime ("podman"). Labels under "cohort." are the agent's own; an admin's
// --label may not set them.
inline constexpr std::string_view kRuntimeLabel = "cohort.runtime";
inline constexpr std::string_view kReservedLabelPrefix = "cohort.";
inline constexpr std::string_view kPodmanRuntime = "podman";

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
  // A random name the agent keeps in its data directory. An agent that registers under a known
  // node id with another instance has lost its memory (re-imaged, disk replaced): the tasks the
  // master placed on the node are gone, and must not be started a second time. Empty: unknown
  // (an older agent).
  std::string instance;

  // The model of its GPUs ("" without GPUs; the first GPU's when they differ).
  std::string GpuModel() const { return gpus.empty() ? "" : gpus.front().model; }
  GpuTopology Topology() const;

  Resources Capacity() const {
    return Resources{static_cast<int64_t>(gpus.size()), milli_cpus, memory_bytes};
  }
};

// READY: synced recently; work may be placed there (unless an admin drained it).
// UNREACHABLE: the master restarted and has not heard from it yet; its tasks are left alone
// and nothing new is placed there. LOST: silent past the node timeout (docs/reliability.md):
// its tasks are LOST and their gangs requeued; it becomes READY again only once a sync shows it
// runs nothing the master does not want.
enum class NodeState { kReady, kUnreachable, kLost };
inline constexpr auto kNodeStateNames = std::to_array<EnumName<NodeState>>({
    {NodeState::kReady, "READY"},
    {NodeState::kUnreachable, "UNREACHABLE"},
    {NodeState::kLost, "LOST"},
});
const char* NodeStateName(NodeState s);

struct Node {
  NodeInfo info;
  NodeState state = NodeState::kUnreachable;
  Timestamp registered_at;
  Timestamp last_seen;
  // Set by an admin (cohort node drain): nothing new is placed there; what runs keeps running.
  bool drained = false;
  std::string drain_reason;
  // Whether the scheduler may place work there.
  bool Schedulable() const { return state == NodeState::kReady && !drained; }
};

}  // namespace cohort
