#include "scheduler/placement.h"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "common/status.h"

namespace cohort::scheduler {
namespace {

// A node chosen for part of a gang, with the tasks it receives.
struct Bin {
  size_t node;
  Resources used;
  std::vector<size_t> tasks;
};

// Smaller is tighter: what would be left on the node, GPUs first.
std::tuple<int64_t, int64_t, int64_t> Leftover(const Resources& free, const Resources& used) {
  return {free.gpus - used.gpus, free.milli_cpus - used.milli_cpus,
          free.memory_bytes - used.memory_bytes};
}

}  // namespace

std::optional<std::vector<TaskPlacement>> PlaceGang(const std::vector<NodeCapacity>& free,
                                                    const std::vector<TaskRequest>& tasks) {
  // Largest tasks first, so that they claim the large nodes (first-fit decreasing).
  std::vector<size_t> task_order(tasks.size());
  std::iota(task_order.begin(), task_order.end(), 0);
  std::stable_sort(task_order.begin(), task_order.end(), [&](size_t a, size_t b) {
    const auto& ra = tasks[a].resources;
    const auto& rb = tasks[b].resources;
    return std::tie(ra.gpus, ra.milli_cpus, ra.memory_bytes) >
           std::tie(rb.gpus, rb.milli_cpus, rb.memory_bytes);
  });
  // Largest free nodes first: opening few, big nodes keeps the gang on as few nodes as it can.
  std::vector<size_t> node_order;
  node_order.reserve(free.size());
  for (size_t i = 0; i < free.size(); ++i) {
    if (free[i].free.gpus > 0 || free[i].free.milli_cpus > 0) node_order.push_back(i);
  }
  std::stable_sort(node_order.begin(), node_order.end(), [&](size_t a, size_t b) {
    const auto& fa = free[a].free;
    const auto& fb = free[b].free;
    return std::tie(fa.gpus, fa.milli_cpus, fa.memory_bytes) >
           std::tie(fb.gpus, fb.milli_cpus, fb.memory_bytes);
  });

  std::vector<Bin> bins;
  std::vector<bool> node_used(free.size(), false);
  for (size_t t : task_order) {
    const Resources& need = tasks[t].resources;
    // Best fit among the nodes already chosen.
    Bin* target = nullptr;
    for (auto& bin : bins) {
      if (!(bin.used + need).FitsIn(free[bin.node].free)) continue;
      if (!target || Leftover(free[bin.node].free, bin.used + need) <
                         Leftover(free[target->node].free, target->used + need)) {
        target = &bin;
      }
    }
    if (!target) {
      // Open the largest unused node that holds it.
      auto chosen = std::find_if(node_order.begin(), node_order.end(), [&](size_t i) {
        return !node_used[i] && need.FitsIn(free[i].free);
      });
      if (chosen == node_order.end()) return std::nullopt;
      node_used[*chosen] = true;
      bins.push_back(Bin{*chosen, {}, {}});
      target = &bins.back();
    }
    target->used += need;
    target->tasks.push_back(t);
  }

  // Best fit: move each part of the gang to the unused node that it fills most tightly, so the
  // big free blocks stay whole.
  for (auto& bin : bins) {
    size_t best = bin.node;
    auto best_left = Leftover(free[bin.node].free, bin.used);
    for (size_t i = 0; i < free.size(); ++i) {
      if (node_used[i] || !bin.used.FitsIn(free[i].free)) continue;
      auto left = Leftover(free[i].free, bin.used);
      if (left < best_left) {
        best = i;
        best_left = left;
      }
    }
    if (best != bin.node) {
      node_used[bin.node] = false;
      node_used[best] = true;
      bin.node = best;
    }
  }

  std::vector<TaskPlacement> placement(tasks.size());
  for (auto& bin : bins) {
    const NodeCapacity& node = free[bin.node];
    COHORT_CHECK(static_cast<int64_t>(node.free_gpus.size()) >= node.free.gpus);
    std::sort(bin.tasks.begin(), bin.tasks.end());  // lower ranks get lower GPU indices
    size_t next_gpu = 0;
    for (size_t t : bin.tasks) {
      placement[t].node_id = node.node_id;
      for (int64_t g = 0; g < tasks[t].resources.gpus; ++g) {
        placement[t].gpus.push_back(node.free_gpus[next_gpu++]);
      }
    }
  }
  return placement;
}

void Reserve(std::vector<NodeCapacity>& free, const std::vector<TaskRequest>& tasks,
             const std::vector<TaskPlacement>& placement) {
  COHORT_CHECK(tasks.size() == placement.size());
  for (size_t t = 0; t < tasks.size(); ++t) {
    auto node = std::find_if(free.begin(), free.end(), [&](const NodeCapacity& n) {
      return n.node_id == placement[t].node_id;
    });
    COHORT_CHECK(node != free.end());
    node->free -= tasks[t].resources;
    for (int gpu : placement[t].gpus) {
      auto it = std::find(node->free_gpus.begin(), node->free_gpus.end(), gpu);
      COHORT_CHECK(it != node->free_gpus.end());
      node->free_gpus.erase(it);
    }
    COHORT_CHECK(node->free.gpus >= 0 && node->free.milli_cpus >= 0 &&
                 node->free.memory_bytes >= 0);
  }
}

}  // namespace cohort::scheduler
