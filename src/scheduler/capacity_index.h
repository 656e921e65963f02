// Free capacity of the cluster, indexed for placement: nodes are kept in buckets by their number
// of free GPUs, so that best fit and "largest first" are a walk over at most a few buckets
// instead of a sort of every node. Pure; one instance per scheduling pass.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/plan.h"

namespace cohort::scheduler {

// GPUs for one task on one node: `count` of `free` (minus `taken`), from the closest-connected
// group that holds them, choosing the group it fills most tightly.
std::vector<int> PickGpus(const NodeCapacity& node, int64_t count, const std::vector<int>& taken);

class CapacityIndex {
 public:
  CapacityIndex() = default;
  // Node order is the tie-break everywhere: the same input gives the same placements.
  explicit CapacityIndex(std::vector<NodeCapacity> nodes);

  // Finds nodes and GPUs for every task, using as few nodes as possible and, among those, the
  // nodes the job fills most tightly (so that large free blocks stay whole). Nothing if the
  // whole set does not fit. Does not change the index.
  // Only nodes that meet `constraints` are considered; a gang prefers nodes of the racks it
  // already uses; within a node, a task takes GPUs of one NVLink (else PCIe switch, else
  // socket) group when it can, from the group it fills most tightly.
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

  int64_t free_gpus() const { return free_gpus_; }
  int64_t largest_free_block() const;
  const NodeCapacity* largest_free_node() const;
  const std::vector<NodeCapacity>& nodes() const { return nodes_; }
  // Index of a node, or -1.
  int Find(const std::string& node_id) const;

 private:
  void Move(size_t node, int64_t old_free_gpus);
  bool Eligible(size_t node, const Constraints& constraints) const;

  std::vector<NodeCapacity> nodes_;
  std::unordered_map<std::string, size_t> by_id_;
  // buckets_[g]: the nodes with exactly g free GPUs, by index.
  std::vector<std::set<size_t>> buckets_;
  int64_t free_gpus_ = 0;
};

}  // namespace cohort::scheduler
