// Builders for tests and benchmarks of the scheduler, the cluster core and the simulator: nodes,
// pending and running jobs, snapshots, and a few plan helpers. Test-only: header-only, included
// by tests and benchmarks, never by a product binary.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "common/status.h"
#include "model/plan.h"
#include "scheduler/scheduler.h"

namespace cohort::testing {

inline constexpr int64_t kGi = 1024LL * 1024 * 1024;

inline Timestamp Minutes(int64_t m) { return FromMicros(m * 60'000'000); }

// An idle node with GPUs 0..gpus-1.
inline NodeCapacity IdleNode(const std::string& id, int gpus, int64_t cpus = 64,
                             int64_t memory_gi = 512) {
  NodeCapacity n;
  n.node_id = id;
  n.total = Resources{gpus, cpus * 1000, memory_gi * kGi};
  n.free = n.total;
  for (int g = 0; g < gpus; ++g) n.free_gpus.push_back(g);
  return n;
}

// `count` identical idle nodes named prefix-0, prefix-1, ...
inline void AddNodes(ClusterSnapshot& c, const std::string& prefix, int count, int gpus,
                     int64_t cpus = 64, int64_t memory_gi = 512) {
  for (int i = 0; i < count; ++i) {
    c.nodes.push_back(IdleNode(prefix + "-" + std::to_string(i), gpus, cpus, memory_gi));
  }
}

// Marks the `gpus` highest free GPUs of node `id` as held by something outside the test.
inline void Occupy(ClusterSnapshot& c, const std::string& id, int gpus) {
  for (auto& n : c.nodes) {
    if (n.node_id != id) continue;
    std::vector<int> highest(n.free_gpus.end() - gpus, n.free_gpus.end());
    TakeFree(n, Resources{gpus, 0, 0}, highest);
  }
}

inline PendingJob Job(JobId id, int replicas, int gpus_each, int priority = 0,
                      int64_t submitted = 0, const std::string& team = "default",
                      const std::string& user = "u") {
  PendingJob j;
  j.job_id = id;
  j.team = team;
  j.user = user;
  j.priority = priority;
  j.submitted_at = FromMicros(submitted);
  for (int i = 0; i < replicas; ++i) {
    j.tasks.push_back(TaskRequest{"worker", i, Resources{gpus_each, 1000, kGi}});
  }
  return j;
}

// Runs `job` on the named nodes (one task per entry), taking their lowest free GPUs.
inline RunningJob& StartRunning(ClusterSnapshot& c, const PendingJob& job,
                                const std::vector<std::string>& nodes, Timestamp started,
                                std::optional<Timestamp> ends_by = std::nullopt) {
  COHORT_CHECK(nodes.size() == job.tasks.size());
  std::vector<TaskPlacement> placement;
  for (size_t t = 0; t < job.tasks.size(); ++t) {
    auto node = std::find_if(c.nodes.begin(), c.nodes.end(),
                             [&](const NodeCapacity& n) { return n.node_id == nodes[t]; });
    COHORT_CHECK(node != c.nodes.end());
    auto gpus = static_cast<size_t>(job.tasks[t].resources.gpus);
    COHORT_CHECK(node->free_gpus.size() >= gpus);
    TaskPlacement p{nodes[t],
                    std::vector<int>(node->free_gpus.begin(),
                                     node->free_gpus.begin() + static_cast<ptrdiff_t>(gpus))};
    COHORT_CHECK(IsFree(*node, job.tasks[t].resources, p.gpus));
    TakeFree(*node, job.tasks[t].resources, p.gpus);
    placement.push_back(std::move(p));
  }
  RunningJob r = cluster::RunningFrom(job, placement, started);
  r.ends_by = ends_by;
  c.running.push_back(std::move(r));
  return c.running.back();
}

// The default policy without least-attained-service levels or promotion: for the tests of other
// mechanisms (backfill, priority, reclaim), whose jobs would otherwise move between levels.
inline scheduler::SchedulerConfig WithoutLevels(scheduler::SchedulerConfig config = {}) {
  config.las_thresholds = {};
  config.promote_after = config.max_wait = std::chrono::hours(24 * 365 * 100);
  return config;
}

inline Plan RunScheduler(const ClusterSnapshot& c, const std::vector<PendingJob>& pending,
                         scheduler::SchedulerConfig config = {}, Timestamp now = FromMicros(0)) {
  return scheduler::NewScheduler(config)->Schedule(scheduler::SchedulingInput{c, pending, now});
}

inline std::set<std::string> NodesOf(const JobPlacement& p) {
  std::set<std::string> nodes;
  for (const auto& t : p.tasks) nodes.insert(t.node_id);
  return nodes;
}

inline std::vector<JobId> PlacedIds(const Plan& plan) {
  std::vector<JobId> ids;
  for (const auto& p : plan.placements) ids.push_back(p.job_id);
  return ids;
}

// The jobs the plan preempts (for one cause, if given), in id order.
inline std::vector<JobId> Victims(const Plan& plan,
                                  std::optional<PreemptionCause> cause = std::nullopt) {
  std::vector<JobId> ids;
  for (const auto& p : plan.preemptions) {
    if (!cause || p.cause == *cause) ids.push_back(p.victim);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

inline const PendingReason* ReasonFor(const Plan& plan, JobId id) {
  for (const auto& w : plan.waiting) {
    if (w.job_id == id) return &w;
  }
  return nullptr;
}

}  // namespace cohort::testing
