#include "scheduler/capacity_index.h"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "common/status.h"

namespace cohort::scheduler {
namespace {

// Part of a gang on one node.
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

CapacityIndex::CapacityIndex(std::vector<NodeCapacity> nodes) : nodes_(std::move(nodes)) {
  int64_t max_gpus = 0;
  for (const auto& n : nodes_) max_gpus = std::max(max_gpus, n.total.gpus);
  buckets_.resize(static_cast<size_t>(max_gpus) + 1);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    by_id_[nodes_[i].node_id] = i;
    COHORT_CHECK(nodes_[i].free.gpus >= 0 && nodes_[i].free.gpus <= max_gpus);
    COHORT_CHECK(static_cast<int64_t>(nodes_[i].free_gpus.size()) == nodes_[i].free.gpus);
    buckets_[static_cast<size_t>(nodes_[i].free.gpus)].insert(i);
    free_gpus_ += nodes_[i].free.gpus;
  }
}

int CapacityIndex::Find(const std::string& node_id) const {
  auto it = by_id_.find(node_id);
  return it == by_id_.end() ? -1 : static_cast<int>(it->second);
}

int64_t CapacityIndex::largest_free_block() const {
  for (size_t g = buckets_.size(); g-- > 0;) {
    if (!buckets_[g].empty()) return static_cast<int64_t>(g);
  }
  return 0;
}

const NodeCapacity* CapacityIndex::largest_free_node() const {
  for (size_t g = buckets_.size(); g-- > 0;) {
    if (!buckets_[g].empty()) return &nodes_[*buckets_[g].begin()];
  }
  return nullptr;
}

std::optional<std::vector<TaskPlacement>> CapacityIndex::Place(
    const std::vector<TaskRequest>& tasks) const {
  if (tasks.empty()) return std::vector<TaskPlacement>{};
  Resources total;
  int64_t largest_task = 0;
  for (const auto& t : tasks) {
    total += t.resources;
    largest_task = std::max(largest_task, t.resources.gpus);
  }
  // Most jobs that do not fit are told so here, without looking at a single node.
  if (total.gpus > free_gpus_ || largest_task >= static_cast<int64_t>(buckets_.size()) ||
      largest_task > largest_free_block()) {
    return std::nullopt;
  }
  // Largest tasks first, so that they claim the large nodes (first-fit decreasing).
  std::vector<size_t> order(tasks.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto& ra = tasks[a].resources;
    const auto& rb = tasks[b].resources;
    return std::tie(ra.gpus, ra.milli_cpus, ra.memory_bytes) >
           std::tie(rb.gpus, rb.milli_cpus, rb.memory_bytes);
  });
  std::vector<Bin> bins;
  std::vector<size_t> used;  // nodes in bins (few)
  auto in_use = [&](size_t n) { return std::find(used.begin(), used.end(), n) != used.end(); };
  for (size_t t : order) {
    const Resources& need = tasks[t].resources;
    Bin* target = nullptr;
    for (auto& bin : bins) {
      if (!(bin.used + need).FitsIn(nodes_[bin.node].free)) continue;
      if (!target || Leftover(nodes_[bin.node].free, bin.used + need) <
                         Leftover(nodes_[target->node].free, target->used + need)) {
        target = &bin;
      }
    }
    if (!target) {
      // Open the largest unused node that holds it: few, big nodes keep the gang compact.
      std::optional<size_t> chosen;
      for (size_t g = buckets_.size(); g-- > static_cast<size_t>(need.gpus) && !chosen;) {
        for (size_t n : buckets_[g]) {
          if (!in_use(n) && need.FitsIn(nodes_[n].free)) {
            chosen = n;
            break;
          }
        }
      }
      if (!chosen) return std::nullopt;
      used.push_back(*chosen);
      bins.push_back(Bin{*chosen, {}, {}});
      target = &bins.back();
    }
    target->used += need;
    target->tasks.push_back(t);
  }
  // Best fit: move each part of the gang to the unused node it fills most tightly.
  for (auto& bin : bins) {
    auto best_left = Leftover(nodes_[bin.node].free, bin.used);
    std::optional<size_t> best;
    for (size_t g = static_cast<size_t>(bin.used.gpus);
         g < buckets_.size() && g < static_cast<size_t>(nodes_[bin.node].free.gpus) + 1 && !best;
         ++g) {
      for (size_t n : buckets_[g]) {
        if (in_use(n) || !bin.used.FitsIn(nodes_[n].free)) continue;
        if (Leftover(nodes_[n].free, bin.used) < best_left) best = n;
        break;  // the first that fits in the tightest bucket is the best of that bucket
      }
    }
    if (best) {
      std::replace(used.begin(), used.end(), bin.node, *best);
      bin.node = *best;
    }
  }
  std::vector<TaskPlacement> placement(tasks.size());
  for (auto& bin : bins) {
    const NodeCapacity& node = nodes_[bin.node];
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

void CapacityIndex::Move(size_t node, int64_t old_free_gpus) {
  buckets_[static_cast<size_t>(old_free_gpus)].erase(node);
  buckets_[static_cast<size_t>(nodes_[node].free.gpus)].insert(node);
}

void CapacityIndex::Take(const std::vector<TaskRequest>& tasks,
                         const std::vector<TaskPlacement>& placement, bool partial) {
  COHORT_CHECK(tasks.size() == placement.size());
  for (size_t t = 0; t < tasks.size(); ++t) {
    int index = Find(placement[t].node_id);
    if (index < 0) continue;  // a node that is not ready: not part of this index
    NodeCapacity& node = nodes_[static_cast<size_t>(index)];
    int64_t old = node.free.gpus;
    Resources take = tasks[t].resources;
    take.gpus = 0;
    for (int gpu : placement[t].gpus) {
      auto it = std::find(node.free_gpus.begin(), node.free_gpus.end(), gpu);
      if (it == node.free_gpus.end() && partial) continue;
      COHORT_CHECK(it != node.free_gpus.end());
      node.free_gpus.erase(it);
      ++take.gpus;
    }
    if (partial) {
      take.milli_cpus = std::min(take.milli_cpus, node.free.milli_cpus);
      take.memory_bytes = std::min(take.memory_bytes, node.free.memory_bytes);
    }
    node.free -= take;
    free_gpus_ -= take.gpus;
    COHORT_CHECK(node.free.gpus >= 0 && node.free.milli_cpus >= 0 && node.free.memory_bytes >= 0);
    Move(static_cast<size_t>(index), old);
  }
}

void CapacityIndex::Give(const std::vector<TaskRequest>& tasks,
                         const std::vector<TaskPlacement>& placement) {
  COHORT_CHECK(tasks.size() == placement.size());
  for (size_t t = 0; t < tasks.size(); ++t) {
    int index = Find(placement[t].node_id);
    if (index < 0) continue;  // a node that is not ready: its resources do not come back here
    NodeCapacity& node = nodes_[static_cast<size_t>(index)];
    int64_t old = node.free.gpus;
    for (int gpu : placement[t].gpus) {
      COHORT_CHECK(std::find(node.free_gpus.begin(), node.free_gpus.end(), gpu) ==
                   node.free_gpus.end());
      node.free_gpus.insert(std::upper_bound(node.free_gpus.begin(), node.free_gpus.end(), gpu),
                            gpu);
    }
    Resources give = tasks[t].resources;
    give.gpus = static_cast<int64_t>(placement[t].gpus.size());
    node.free += give;
    free_gpus_ += give.gpus;
    COHORT_CHECK(node.free.FitsIn(node.total));
    Move(static_cast<size_t>(index), old);
  }
}

}  // namespace cohort::scheduler
