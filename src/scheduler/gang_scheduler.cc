#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "common/units.h"
#include "scheduler/placement.h"
#include "scheduler/scheduler.h"

namespace cohort::scheduler {
namespace {

std::string Gpus(int64_t n) { return fmt::format("{} GPU{}", n, n == 1 ? "" : "s"); }

// Why a job that did not fit waits, and whether it could ever fit in this cluster.
PendingReason Explain(const PendingJob& job, const ClusterSnapshot& cluster,
                      const std::vector<NodeCapacity>& free) {
  PendingReason reason{job.job_id, "", false};
  if (cluster.nodes.empty()) {
    reason.reason = "no nodes are ready";
    reason.unschedulable = true;
    return reason;
  }
  Resources largest_node;
  Resources cluster_total;
  for (const auto& n : cluster.nodes) {
    largest_node.gpus = std::max(largest_node.gpus, n.total.gpus);
    largest_node.milli_cpus = std::max(largest_node.milli_cpus, n.total.milli_cpus);
    largest_node.memory_bytes = std::max(largest_node.memory_bytes, n.total.memory_bytes);
    cluster_total += n.total;
  }
  Resources need;
  for (const auto& t : job.tasks) {
    need += t.resources;
    const Resources& r = t.resources;
    bool fits_some_node = std::any_of(cluster.nodes.begin(), cluster.nodes.end(),
                                      [&](const NodeCapacity& n) { return r.FitsIn(n.total); });
    if (fits_some_node) continue;
    reason.unschedulable = true;
    std::string what;
    if (r.gpus > largest_node.gpus) {
      what = fmt::format("{} on one node, but the largest node has {}", Gpus(r.gpus),
                         Gpus(largest_node.gpus));
    } else if (r.milli_cpus > largest_node.milli_cpus) {
      what = fmt::format("{} CPUs on one node, but the largest node has {}",
                         FormatMilliCpus(r.milli_cpus), FormatMilliCpus(largest_node.milli_cpus));
    } else if (r.memory_bytes > largest_node.memory_bytes) {
      what = fmt::format("{} of memory on one node, but the largest node has {}",
                         FormatByteSize(r.memory_bytes), FormatByteSize(largest_node.memory_bytes));
    } else {
      what = fmt::format("{} on one node, and no node has all of it", r.ToString());
    }
    reason.reason = fmt::format("unschedulable: task {}/{} needs {}", t.role, t.index, what);
    return reason;
  }
  if (!need.FitsIn(cluster_total)) {
    reason.unschedulable = true;
    reason.reason = fmt::format("unschedulable: needs {} in all, but the cluster has {}",
                                need.ToString(), cluster_total.ToString());
    return reason;
  }
  int64_t free_gpus = 0;
  const NodeCapacity* largest_free = nullptr;
  for (const auto& n : free) {
    free_gpus += n.free.gpus;
    if (!largest_free || n.free.gpus > largest_free->free.gpus) largest_free = &n;
  }
  std::string gang = job.tasks.size() > 1
                         ? fmt::format("{} tasks started together", job.tasks.size())
                         : std::string("1 task");
  reason.reason = fmt::format(
      "waiting for resources: needs {} ({}); {} free in the cluster, the largest free block is "
      "{} on {}",
      need.ToString(), gang, Gpus(free_gpus), Gpus(largest_free ? largest_free->free.gpus : 0),
      largest_free ? largest_free->node_id : "-");
  return reason;
}

class GangScheduler final : public Scheduler {
 public:
  explicit GangScheduler(SchedulerConfig config) : config_(config) {}

  Plan Schedule(const SchedulingInput& input) override {
    Plan plan;
    std::vector<NodeCapacity> free = input.cluster.nodes;
    std::vector<size_t> order(input.pending.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const PendingJob& ja = input.pending[a];
      const PendingJob& jb = input.pending[b];
      if (ja.priority != jb.priority) return ja.priority > jb.priority;
      if (ja.submitted_at != jb.submitted_at) return ja.submitted_at < jb.submitted_at;
      return ja.job_id < jb.job_id;
    });
    for (size_t i : order) {
      const PendingJob& job = input.pending[i];
      auto placement = PlaceGang(free, job.tasks);
      if (!placement) {
        plan.waiting.push_back(Explain(job, input.cluster, free));
        continue;
      }
      Reserve(free, job.tasks, *placement);
      plan.placements.push_back(JobPlacement{job.job_id, std::move(*placement)});
    }
    return plan;
  }

 private:
  [[maybe_unused]] SchedulerConfig config_;
};

}  // namespace

std::unique_ptr<Scheduler> NewGangScheduler(SchedulerConfig config) {
  return std::make_unique<GangScheduler>(config);
}

}  // namespace cohort::scheduler
