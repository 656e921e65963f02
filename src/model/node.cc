#include "model/node.h"

namespace cohort {

const char* GpuLinkTypeName(GpuLinkType t) {
  switch (t) {
    case GpuLinkType::kNvLink:
      return "nvlink";
    case GpuLinkType::kPcieSwitch:
      return "pcie-switch";
    case GpuLinkType::kPcieHostBridge:
      return "pcie-host-bridge";
    case GpuLinkType::kSystem:
      return "system";
  }
  return "system";
}

std::optional<GpuLinkType> ParseGpuLinkType(std::string_view name) {
  for (GpuLinkType t : {GpuLinkType::kNvLink, GpuLinkType::kPcieSwitch,
                        GpuLinkType::kPcieHostBridge, GpuLinkType::kSystem}) {
    if (name == GpuLinkTypeName(t)) return t;
  }
  return std::nullopt;
}

const char* NodeStateName(NodeState s) {
  switch (s) {
    case NodeState::kReady:
      return "READY";
    case NodeState::kUnreachable:
      return "UNREACHABLE";
  }
  return "UNKNOWN";
}

}  // namespace cohort
