// Free capacity of the cluster, indexed for placement: nodes are kept in buckets by their number
// of free GPUs, so that best fit and "largest first" are a walk over at most a few buckets
// instead of a sort of every node. Pure; one instance per scheduling pass.
//
// What-ifs (could this job fit if those jobs stopped, or once these jobs end?) change an index
// and then take the change back with Mark() and Rollback(): a copy of the index costs every node,
// a rollback only the nodes the what-if touched.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/plan.h"

namespace cohort::scheduler {

// GPUs for one task on one node: `count` of `free` (minus `taken`), from the closest-connected
// group that holds them, choosing the group it fills most tightly.
std::vector<int> PickGpus(const NodeCapacity& node, int64_t count, const std::vector<int>& taken);

// Whether the node meets the constraints: its GPU model, its labels, and not one the job is kept
// off.
bool Meets(const NodeCapacity& n, const Constraints& constraints);

// Whether `tasks` could fit by their GPUs alone, where `free_total` GPUs are free in all, no node
// has more than `largest` free, and `nodes_with(g)` nodes have at least g free: the total, the
// largest task, and tasks of more than half of `largest` (no two of which can share a node) each
// on a node of its own, the k-th largest on one of k such nodes. A necessary condition: false
// means they cannot fit; true only that they might (CPUs, memory and constraints are not looked
// at).
template <typename NodesWith>
bool GpusMightFit(const std::vector<TaskRequest>& tasks, int64_t free_total, int64_t largest,
                  NodesWith nodes_with) {
  int64_t total = 0;
  int64_t biggest = 0;
  size_t big = 0;
  for (const auto& t : tasks) {
    total += t.resources.gpus;
    biggest = std::max(biggest, t.resources.gpus);
    big += t.resources.gpus * 2 > largest ? 1 : 0;
  }
  if (total > free_total || biggest > largest) return false;
  if (big < 2) return true;
  std::vector<int64_t> sizes;
  sizes.reserve(big);
  for (const auto& t : tasks) {
    if (t.resources.gpus * 2 > largest) sizes.push_back(t.resources.gpus);
  }
  std::sort(sizes.rbegin(), sizes.rend());
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (nodes_with(sizes[k]) < k + 1) return false;
  }
  return true;
}

class CapacityIndex {
 public:
  CapacityIndex() = default;
  // Node order is the tie-break everywhere: the same input gives the same placements.
  explicit CapacityIndex(std::vector<NodeCapacity> nodes);
  // Makes it the index of `nodes`, as the constructor would, reusing its buffers (a scheduler
  // that keeps its indexes from pass to pass copies the nodes without allocating them anew).
  void Reset(const std::vector<NodeCapacity>& nodes);

  // Finds nodes and GPUs for every task, using as few nodes as possible and, among those, the
  // nodes the job fills most tightly (so that large free blocks stay whole). Nothing if the
  // whole set does not fit. Does not change the index.
  // Only nodes that meet `constraints` are considered; a gang prefers nodes of the racks it
  // already uses; within a node, a task takes GPUs of one NVLink (else PCIe switch, else
  // socket) group when it can, from the group it fills most tightly. Nodes of
  // constraints.preferred_nodes (that hold the job's datasets) are opened before any other, and
  // best fit keeps a part of the gang on one. No two tasks that may not share a node
  // (MayShareNode: replicas of a group with distinct_nodes) go on one.
  std::optional<std::vector<TaskPlacement>> Place(const std::vector<TaskRequest>& tasks,
                                                  const Constraints& constraints = {}) const;

  // Takes the placed tasks' resources and GPUs (tasks on nodes this index does not hold are
  // skipped, as in Give). With `partial`, GPUs or resources that are
  // already taken are skipped instead of being a broken invariant (used for reservations,
  // which may cover GPUs that are busy now).
  void Take(const std::vector<TaskRequest>& tasks, const std::vector<TaskPlacement>& placement,
            bool partial = false);
  // Gives them back (a preemption or a job that ends, in a what-if). With `partial`, what is
  // free already is skipped (a timeline of expected ends, where a reservation and a job that
  // ends before it both cover some GPUs).
  void Give(const std::vector<TaskRequest>& tasks, const std::vector<TaskPlacement>& placement,
            bool partial = false);
  // The same with each task's node already found (`nodes[t]`: Find of its node), for callers
  // that give the same placements back again and again (reservations walk every running job).
  void Give(const std::vector<TaskRequest>& tasks, const std::vector<TaskPlacement>& placement,
            const int* nodes, bool partial);

  // Starts a what-if: Take and Give remember each node they change, as it was, and Rollback()
  // puts those nodes back, so that the index is again exactly as it was at Mark() (the same free
  // resources and GPUs, the same node order within each bucket). One mark at a time.
  void Mark();
  void Rollback();

  int64_t free_gpus() const { return free_gpus_; }
  int64_t largest_free_block() const;
  const NodeCapacity* largest_free_node() const;
  const std::vector<NodeCapacity>& nodes() const { return nodes_; }
  // Index of a node, or -1.
  int Find(const std::string& node_id) const;

 private:
  static constexpr size_t kNone = SIZE_MAX;
  // Buckets, the id map and the free total, from nodes_.
  void Build();
  // The first node (by index) from `from` on with exactly `gpus` free GPUs, or kNone.
  size_t FirstIn(size_t gpus, size_t from = 0) const;
  void Move(size_t node, int64_t old_free_gpus);
  // Take or Give of one task on node `node` (an index; negative: not in this index).
  void TakeTask(int node, const TaskRequest& task, const TaskPlacement& placement, bool partial);
  void GiveTask(int node, const TaskRequest& task, const TaskPlacement& placement, bool partial);
  // Remembers the node as it is, if a what-if is under way and has not touched it yet.
  void Save(size_t node);
  bool Eligible(size_t node, const Constraints& constraints) const;
  // Whether the node is one the job prefers (Constraints::preferred_nodes).
  bool Preferred(size_t node, const Constraints& constraints) const;
  // How many nodes have at least `gpus` GPUs free.
  size_t NodesWithAtLeast(int64_t gpus) const;

  // Place(), step by step. A bin is the part of the gang on one node.
  struct Bin;
  // First-fit decreasing into bins, each on a node of its own (`used`, in bin order); a task
  // joins no bin with one it may not share a node with (MayShareNode); false if some task fits
  // nowhere.
  bool FillBins(const std::vector<TaskRequest>& tasks, const Constraints& constraints,
                std::vector<Bin>& bins, std::vector<size_t>& used) const;
  // The largest unused node that holds `need`; among the largest, one in a rack the gang
  // already uses.
  std::optional<size_t> OpenNode(const Resources& need, const Constraints& constraints,
                                 const std::vector<size_t>& used) const;
  // Best fit: moves each bin to the unused node it fills most tightly.
  void Tighten(const Constraints& constraints, std::vector<Bin>& bins,
               std::vector<size_t>& used) const;
  // The GPUs of each task on its bin's node.
  std::vector<TaskPlacement> PickGpusOf(const std::vector<TaskRequest>& tasks,
                                        std::vector<Bin>& bins) const;
  std::string RackOf(size_t node) const;

  std::vector<NodeCapacity> nodes_;
  // Nodes by id: an open-addressing table of node index + 1 (0: empty), a power of two in size,
  // probed linearly from the id's hash. Node ids never change after construction: copies of the
  // index share it. (Placements name nodes by id, and a what-if looks up every task it gives
  // back: this is the index's most frequent operation.)
  std::shared_ptr<const std::vector<uint32_t>> by_id_;
  // The nodes with exactly g free GPUs: a bit per node, words_ words per bucket from g * words_
  // (copied in one piece, walked in node order).
  size_t words_ = 0;
  std::vector<uint64_t> buckets_;
  std::vector<size_t> bucket_sizes_;  // by g; its size is the number of buckets
  int64_t free_gpus_ = 0;

  // The what-if under way (Mark): nodes as they were before it first changed them.
  struct Saved {
    size_t node = 0;
    Resources free;
    std::vector<int> free_gpus;
  };
  bool marked_ = false;
  int64_t marked_free_gpus_ = 0;
  std::vector<Saved> saved_;  // the first saved_count_ are in use (the rest keep their buffers)
  size_t saved_count_ = 0;
  std::vector<uint8_t> touched_;  // by node: saved during this what-if
};

// A what-if on `index` for the length of a scope: marked now, rolled back when it ends.
class ScopedWhatIf {
 public:
  explicit ScopedWhatIf(CapacityIndex& index) : index_(index) { index_.Mark(); }
  ~ScopedWhatIf() { index_.Rollback(); }
  ScopedWhatIf(const ScopedWhatIf&) = delete;
  ScopedWhatIf& operator=(const ScopedWhatIf&) = delete;

 private:
  CapacityIndex& index_;
};

}  // namespace cohort::scheduler
