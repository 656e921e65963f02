#include "scheduler/capacity_index.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>
#include <string_view>
#include <tuple>

#include "common/status.h"

namespace cohort::scheduler {
namespace {

// A node id's hash for the id table: eight bytes at a time (ids are short).
uint64_t HashId(std::string_view id) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ id.size();
  size_t i = 0;
  for (; i + 8 <= id.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, id.data() + i, 8);
    h = (h ^ word) * 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  }
  uint64_t tail = 0;
  for (; i < id.size(); ++i) tail = (tail << 8) | static_cast<uint8_t>(id[i]);
  h = (h ^ tail) * 0x94d049bb133111ebULL;
  return h ^ (h >> 29);
}

// Smaller is tighter: what would be left on the node, GPUs first.
std::tuple<int64_t, int64_t, int64_t> Leftover(const Resources& free, const Resources& used) {
  return {free.gpus - used.gpus, free.milli_cpus - used.milli_cpus,
          free.memory_bytes - used.memory_bytes};
}

bool InUse(const std::vector<size_t>& used, size_t node) {
  return std::find(used.begin(), used.end(), node) != used.end();
}

}  // namespace

// Part of a gang on one node.
struct CapacityIndex::Bin {
  size_t node;
  Resources used;
  std::vector<size_t> tasks;
};

CapacityIndex::CapacityIndex(std::vector<NodeCapacity> nodes) : nodes_(std::move(nodes)) {
  Build();
}

void CapacityIndex::Reset(const std::vector<NodeCapacity>& nodes) {
  COHORT_CHECK(!marked_);
  bool same_ids = by_id_ && nodes_.size() == nodes.size();
  for (size_t i = 0; i < nodes.size() && same_ids; ++i) {
    same_ids = nodes_[i].node_id == nodes[i].node_id;
  }
  nodes_.resize(nodes.size());  // element by element below: buffers are kept
  for (size_t i = 0; i < nodes.size(); ++i) CopyCapacity(nodes[i], nodes_[i]);
  if (!same_ids) by_id_.reset();
  Build();
}

void CapacityIndex::Build() {
  int64_t max_gpus = 0;
  for (const auto& n : nodes_) max_gpus = std::max(max_gpus, n.total.gpus);
  words_ = (nodes_.size() + 63) / 64;
  bucket_sizes_.assign(static_cast<size_t>(max_gpus) + 1, 0);
  buckets_.assign(bucket_sizes_.size() * words_, 0);
  free_gpus_ = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    COHORT_CHECK(nodes_[i].free.gpus >= 0 && nodes_[i].free.gpus <= max_gpus);
    COHORT_CHECK(static_cast<int64_t>(nodes_[i].free_gpus.size()) == nodes_[i].free.gpus);
    size_t g = static_cast<size_t>(nodes_[i].free.gpus);
    buckets_[g * words_ + i / 64] |= uint64_t{1} << (i % 64);
    ++bucket_sizes_[g];
    free_gpus_ += nodes_[i].free.gpus;
  }
  if (by_id_) return;  // the same nodes as before
  size_t size = 4;
  while (size < 2 * nodes_.size()) size *= 2;
  auto by_id = std::make_shared<std::vector<uint32_t>>(size, 0);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (size_t slot = HashId(nodes_[i].node_id) & (size - 1);; slot = (slot + 1) & (size - 1)) {
      uint32_t& at = (*by_id)[slot];
      // A second node with the same id takes the first one's place, as a map's would.
      if (at == 0 || nodes_[at - 1].node_id == nodes_[i].node_id) {
        at = static_cast<uint32_t>(i + 1);
        break;
      }
    }
  }
  by_id_ = std::move(by_id);
}

int CapacityIndex::Find(const std::string& node_id) const {
  if (!by_id_) return -1;
  const std::vector<uint32_t>& table = *by_id_;
  size_t mask = table.size() - 1;
  for (size_t slot = HashId(node_id) & mask;; slot = (slot + 1) & mask) {
    uint32_t at = table[slot];
    if (at == 0) return -1;
    if (nodes_[at - 1].node_id == node_id) return static_cast<int>(at - 1);
  }
}

size_t CapacityIndex::FirstIn(size_t gpus, size_t from) const {
  size_t w = from / 64;
  if (w >= words_) return kNone;
  const uint64_t* bits = &buckets_[gpus * words_];
  uint64_t word = bits[w] & (~uint64_t{0} << (from % 64));
  while (word == 0) {
    if (++w >= words_) return kNone;
    word = bits[w];
  }
  return w * 64 + static_cast<size_t>(std::countr_zero(word));
}

int64_t CapacityIndex::largest_free_block() const {
  for (size_t g = bucket_sizes_.size(); g-- > 0;) {
    if (bucket_sizes_[g] > 0) return static_cast<int64_t>(g);
  }
  return 0;
}

const NodeCapacity* CapacityIndex::largest_free_node() const {
  for (size_t g = bucket_sizes_.size(); g-- > 0;) {
    if (bucket_sizes_[g] > 0) return &nodes_[FirstIn(g)];
  }
  return nullptr;
}

std::vector<int> PickGpus(const NodeCapacity& node, int64_t count, const std::vector<int>& taken) {
  std::vector<int> free;
  for (int g : node.free_gpus) {
    if (std::find(taken.begin(), taken.end(), g) == taken.end()) free.push_back(g);
  }
  COHORT_CHECK(static_cast<int64_t>(free.size()) >= count);
  auto is_free = [&](int g) { return std::find(free.begin(), free.end(), g) != free.end(); };
  if (node.topology && count > 0) {
    for (const auto& groups : node.topology->levels) {
      const std::vector<int>* best = nullptr;
      int64_t best_free = 0;
      for (const auto& group : groups) {
        int64_t n = std::count_if(group.begin(), group.end(), is_free);
        if (n >= count && (!best || n < best_free)) {
          best = &group;
          best_free = n;
        }
      }
      if (!best) continue;
      std::vector<int> out;
      for (int g : *best) {
        if (is_free(g) && static_cast<int64_t>(out.size()) < count) out.push_back(g);
      }
      return out;
    }
  }
  return std::vector<int>(free.begin(), free.begin() + count);
}

size_t CapacityIndex::NodesWithAtLeast(int64_t gpus) const {
  size_t nodes = 0;
  for (size_t g = static_cast<size_t>(std::max<int64_t>(gpus, 0)); g < bucket_sizes_.size(); ++g) {
    nodes += bucket_sizes_[g];
  }
  return nodes;
}

bool Meets(const NodeCapacity& n, const Constraints& constraints) {
  if (constraints.empty()) return true;
  return constraints.Admits(n.node_id, n.gpu_model, n.labels);
}

bool CapacityIndex::Eligible(size_t node, const Constraints& constraints) const {
  return Meets(nodes_[node], constraints);
}

std::optional<std::vector<TaskPlacement>> CapacityIndex::Place(
    const std::vector<TaskRequest>& tasks, const Constraints& constraints) const {
  if (tasks.empty()) return std::vector<TaskPlacement>{};
  int64_t largest_task = 0;
  for (const auto& t : tasks) largest_task = std::max(largest_task, t.resources.gpus);
  // Most jobs that do not fit are told so here, without looking at a single node.
  if (largest_task >= static_cast<int64_t>(bucket_sizes_.size()) ||
      !GpusMightFit(tasks, free_gpus_, largest_free_block(),
                    [&](int64_t gpus) { return NodesWithAtLeast(gpus); })) {
    return std::nullopt;
  }
  std::vector<Bin> bins;
  std::vector<size_t> used;  // nodes in bins (few)
  if (!FillBins(tasks, constraints, bins, used)) return std::nullopt;
  Tighten(constraints, bins, used);
  return PickGpusOf(tasks, bins);
}

std::string CapacityIndex::RackOf(size_t node) const {
  auto it = nodes_[node].labels.find("rack");
  return it == nodes_[node].labels.end() ? std::string() : it->second;
}

bool CapacityIndex::FillBins(const std::vector<TaskRequest>& tasks, const Constraints& constraints,
                             std::vector<Bin>& bins, std::vector<size_t>& used) const {
  // Largest tasks first, so that they claim the large nodes (first-fit decreasing).
  std::vector<size_t> order(tasks.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto& ra = tasks[a].resources;
    const auto& rb = tasks[b].resources;
    return std::tie(ra.gpus, ra.milli_cpus, ra.memory_bytes) >
           std::tie(rb.gpus, rb.milli_cpus, rb.memory_bytes);
  });
  for (size_t t : order) {
    const Resources& need = tasks[t].resources;
    // A replica of a group whose replicas need a node each joins no bin that holds another.
    const bool apart = tasks[t].distinct_nodes;
    Bin* target = nullptr;
    for (auto& bin : bins) {
      if (!(bin.used + need).FitsIn(nodes_[bin.node].free)) continue;
      if (apart && !std::all_of(bin.tasks.begin(), bin.tasks.end(),
                                [&](size_t u) { return MayShareNode(tasks[u], tasks[t]); })) {
        continue;
      }
      if (!target || Leftover(nodes_[bin.node].free, bin.used + need) <
                         Leftover(nodes_[target->node].free, target->used + need)) {
        target = &bin;
      }
    }
    if (!target) {
      std::optional<size_t> chosen = OpenNode(need, constraints, used);
      if (!chosen) return false;
      used.push_back(*chosen);
      bins.push_back(Bin{*chosen, {}, {}});
      target = &bins.back();
    }
    target->used += need;
    target->tasks.push_back(t);
  }
  return true;
}

std::optional<size_t> CapacityIndex::OpenNode(const Resources& need, const Constraints& constraints,
                                              const std::vector<size_t>& used) const {
  // Few, big nodes keep the gang compact; fewest racks too.
  auto in_used_rack = [&](size_t n) {
    std::string rack = RackOf(n);
    return std::any_of(used.begin(), used.end(), [&](size_t u) { return RackOf(u) == rack; });
  };
  // Nodes that hold the job's datasets first (Constraints::preferred_nodes), then any.
  const bool prefer = !constraints.preferred_nodes.empty();
  for (bool only_preferred : {prefer, false}) {
    std::optional<size_t> chosen;
    for (size_t g = bucket_sizes_.size(); g-- > static_cast<size_t>(need.gpus) && !chosen;) {
      for (size_t n = FirstIn(g); n != kNone; n = FirstIn(g, n + 1)) {
        if (InUse(used, n) || !need.FitsIn(nodes_[n].free) || !Eligible(n, constraints)) continue;
        if (only_preferred && !Preferred(n, constraints)) continue;
        if (!chosen) chosen = n;
        if (used.empty() || in_used_rack(n)) {
          chosen = n;
          break;
        }
      }
    }
    if (chosen || !only_preferred) return chosen;
  }
  return std::nullopt;
}

bool CapacityIndex::Preferred(size_t node, const Constraints& constraints) const {
  return constraints.preferred_nodes.count(nodes_[node].node_id) > 0;
}

void CapacityIndex::Tighten(const Constraints& constraints, std::vector<Bin>& bins,
                            std::vector<size_t>& used) const {
  const bool prefer = !constraints.preferred_nodes.empty();
  for (auto& bin : bins) {
    // A bin on a node that holds the job's datasets stays on such a node.
    const bool keep_preferred = prefer && Preferred(bin.node, constraints);
    auto best_left = Leftover(nodes_[bin.node].free, bin.used);
    std::optional<size_t> best;
    for (size_t g = static_cast<size_t>(bin.used.gpus);
         g < bucket_sizes_.size() && g < static_cast<size_t>(nodes_[bin.node].free.gpus) + 1 &&
         !best;
         ++g) {
      std::optional<size_t> first;
      for (size_t n = FirstIn(g); n != kNone; n = FirstIn(g, n + 1)) {
        if (InUse(used, n) || !bin.used.FitsIn(nodes_[n].free) || !Eligible(n, constraints) ||
            (keep_preferred && !Preferred(n, constraints))) {
          continue;
        }
        if (!(Leftover(nodes_[n].free, bin.used) < best_left)) break;  // no tighter here
        if (!first) first = n;
        // Equally tight: one in the same rack as the rest of the gang wins.
        if (bins.size() == 1 || RackOf(n) == RackOf(bin.node)) {
          first = n;
          break;
        }
      }
      best = first;
    }
    if (best) {
      std::replace(used.begin(), used.end(), bin.node, *best);
      bin.node = *best;
    }
  }
}

std::vector<TaskPlacement> CapacityIndex::PickGpusOf(const std::vector<TaskRequest>& tasks,
                                                     std::vector<Bin>& bins) const {
  std::vector<TaskPlacement> placement(tasks.size());
  for (auto& bin : bins) {
    const NodeCapacity& node = nodes_[bin.node];
    std::sort(bin.tasks.begin(), bin.tasks.end());  // lower ranks get lower GPU indices
    std::vector<int> taken;
    for (size_t t : bin.tasks) {
      placement[t].node_id = node.node_id;
      placement[t].gpus = PickGpus(node, tasks[t].resources.gpus, taken);
      taken.insert(taken.end(), placement[t].gpus.begin(), placement[t].gpus.end());
    }
  }
  return placement;
}

void CapacityIndex::Move(size_t node, int64_t old_free_gpus) {
  size_t from = static_cast<size_t>(old_free_gpus);
  size_t to = static_cast<size_t>(nodes_[node].free.gpus);
  if (from == to) return;
  uint64_t bit = uint64_t{1} << (node % 64);
  buckets_[from * words_ + node / 64] &= ~bit;
  buckets_[to * words_ + node / 64] |= bit;
  --bucket_sizes_[from];
  ++bucket_sizes_[to];
}

void CapacityIndex::Mark() {
  COHORT_CHECK(!marked_);
  marked_ = true;
  marked_free_gpus_ = free_gpus_;
  if (touched_.size() != nodes_.size()) touched_.assign(nodes_.size(), 0);
}

void CapacityIndex::Save(size_t node) {
  if (!marked_ || touched_[node]) return;
  touched_[node] = 1;
  if (saved_count_ == saved_.size()) saved_.emplace_back();
  Saved& s = saved_[saved_count_++];
  s.node = node;
  s.free = nodes_[node].free;
  s.free_gpus = nodes_[node].free_gpus;
}

void CapacityIndex::Rollback() {
  COHORT_CHECK(marked_);
  for (size_t i = 0; i < saved_count_; ++i) {
    Saved& s = saved_[i];
    NodeCapacity& n = nodes_[s.node];
    int64_t old = n.free.gpus;
    n.free = s.free;
    n.free_gpus.swap(s.free_gpus);
    Move(s.node, old);
    touched_[s.node] = 0;
  }
  saved_count_ = 0;
  free_gpus_ = marked_free_gpus_;
  marked_ = false;
}

void CapacityIndex::TakeTask(int index, const TaskRequest& task, const TaskPlacement& placement,
                             bool partial) {
  if (index < 0) return;  // a node that is not ready: not part of this index
  size_t node = static_cast<size_t>(index);
  Save(node);
  int64_t old = nodes_[node].free.gpus;
  free_gpus_ -= TakeFree(nodes_[node], task.resources, placement.gpus, partial).gpus;
  Move(node, old);
}

void CapacityIndex::GiveTask(int index, const TaskRequest& task, const TaskPlacement& placement,
                             bool partial) {
  if (index < 0) return;  // a node that is not ready: its resources do not come back here
  size_t node = static_cast<size_t>(index);
  Save(node);
  int64_t old = nodes_[node].free.gpus;
  free_gpus_ += GiveFree(nodes_[node], task.resources, placement.gpus, partial).gpus;
  Move(node, old);
}

void CapacityIndex::Take(const std::vector<TaskRequest>& tasks,
                         const std::vector<TaskPlacement>& placement, bool partial) {
  COHORT_CHECK(tasks.size() == placement.size());
  for (size_t t = 0; t < tasks.size(); ++t) {
    TakeTask(Find(placement[t].node_id), tasks[t], placement[t], partial);
  }
}

void CapacityIndex::Give(const std::vector<TaskRequest>& tasks,
                         const std::vector<TaskPlacement>& placement, bool partial) {
  COHORT_CHECK(tasks.size() == placement.size());
  for (size_t t = 0; t < tasks.size(); ++t) {
    GiveTask(Find(placement[t].node_id), tasks[t], placement[t], partial);
  }
}

void CapacityIndex::Give(const std::vector<TaskRequest>& tasks,
                         const std::vector<TaskPlacement>& placement, const int* nodes,
                         bool partial) {
  COHORT_CHECK(tasks.size() == placement.size());
  for (size_t t = 0; t < tasks.size(); ++t) GiveTask(nodes[t], tasks[t], placement[t], partial);
}

}  // namespace cohort::scheduler
