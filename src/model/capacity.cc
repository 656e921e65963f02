#include <algorithm>
#include <string_view>
#include <utility>

#include "common/status.h"
#include "model/plan.h"

namespace cohort {

bool IsFree(const NodeCapacity& node, const Resources& resources, const std::vector<int>& gpus) {
  if (static_cast<int64_t>(gpus.size()) != resources.gpus || !resources.FitsIn(node.free)) {
    return false;
  }
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (!std::binary_search(node.free_gpus.begin(), node.free_gpus.end(), gpus[i])) return false;
    // The same GPU twice in one task is not two GPUs.
    if (std::find(gpus.begin(), gpus.begin() + static_cast<ptrdiff_t>(i), gpus[i]) !=
        gpus.begin() + static_cast<ptrdiff_t>(i)) {
      return false;
    }
  }
  return true;
}

Resources TakeFree(NodeCapacity& node, const Resources& resources, const std::vector<int>& gpus,
                   bool partial) {
  Resources take = resources;
  take.gpus = 0;
  for (int gpu : gpus) {
    auto it = std::lower_bound(node.free_gpus.begin(), node.free_gpus.end(), gpu);
    bool free = it != node.free_gpus.end() && *it == gpu;
    if (!free && partial) continue;
    COHORT_CHECK(free);
    node.free_gpus.erase(it);
    ++take.gpus;
  }
  if (partial) {
    take.milli_cpus = std::min(take.milli_cpus, node.free.milli_cpus);
    take.memory_bytes = std::min(take.memory_bytes, node.free.memory_bytes);
  }
  node.free -= take;
  COHORT_CHECK(node.free.gpus >= 0 && node.free.milli_cpus >= 0 && node.free.memory_bytes >= 0);
  return take;
}

Resources GiveFree(NodeCapacity& node, const Resources& resources, const std::vector<int>& gpus,
                   bool partial) {
  Resources give = resources;
  give.gpus = 0;
  for (int gpu : gpus) {
    auto at = std::lower_bound(node.free_gpus.begin(), node.free_gpus.end(), gpu);
    bool already = at != node.free_gpus.end() && *at == gpu;
    if (already && partial) continue;
    COHORT_CHECK(!already);
    node.free_gpus.insert(at, gpu);
    ++give.gpus;
  }
  if (partial) {
    give.milli_cpus = std::min(give.milli_cpus, node.total.milli_cpus - node.free.milli_cpus);
    give.memory_bytes =
        std::min(give.memory_bytes, node.total.memory_bytes - node.free.memory_bytes);
  }
  node.free += give;
  COHORT_CHECK(node.free.FitsIn(node.total));
  return give;
}

bool KeepsDistinctNodes(const std::vector<TaskRequest>& tasks,
                        const std::vector<TaskPlacement>& placement) {
  if (!AnyOnDistinctNodes(tasks)) return true;
  // (node, task) of the tasks that need a node apart, by node: neighbours are on one node.
  std::vector<std::pair<std::string_view, size_t>> apart;
  for (size_t t = 0; t < tasks.size() && t < placement.size(); ++t) {
    if (tasks[t].distinct_nodes) apart.emplace_back(placement[t].node_id, t);
  }
  std::sort(apart.begin(), apart.end());
  for (size_t i = 0; i < apart.size(); ++i) {
    for (size_t j = i + 1; j < apart.size() && apart[j].first == apart[i].first; ++j) {
      if (!MayShareNode(tasks[apart[i].second], tasks[apart[j].second])) return false;
    }
  }
  return true;
}

}  // namespace cohort
