#include "model/node.h"

#include <algorithm>
#include <functional>

namespace cohort {

const char* GpuLinkTypeName(GpuLinkType t) { return NameOf(kGpuLinkTypeNames, t, "system"); }

std::optional<GpuLinkType> ParseGpuLinkType(std::string_view name) {
  return Parse(kGpuLinkTypeNames, name);
}

GpuTopology NodeInfo::Topology() const {
  GpuTopology topology;
  const int n = static_cast<int>(gpus.size());
  for (GpuLinkType level :
       {GpuLinkType::kNvLink, GpuLinkType::kPcieSwitch, GpuLinkType::kPcieHostBridge}) {
    // Union-find over the links at least this close.
    std::vector<int> parent(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) parent[static_cast<size_t>(i)] = i;
    std::function<int(int)> root = [&](int x) {
      while (parent[static_cast<size_t>(x)] != x) x = parent[static_cast<size_t>(x)];
      return x;
    };
    for (const auto& link : gpu_links) {
      if (link.type > level || link.a < 0 || link.b < 0 || link.a >= n || link.b >= n) continue;
      parent[static_cast<size_t>(root(link.a))] = root(link.b);
    }
    std::map<int, std::vector<int>> groups;
    for (int i = 0; i < n; ++i) groups[root(i)].push_back(gpus[static_cast<size_t>(i)].index);
    std::vector<std::vector<int>> level_groups;
    for (auto& [r, g] : groups) level_groups.push_back(std::move(g));
    std::sort(level_groups.begin(), level_groups.end());
    topology.levels.push_back(std::move(level_groups));
  }
  return topology;
}

const char* NodeStateName(NodeState s) { return NameOf(kNodeStateNames, s); }

}  // namespace cohort
