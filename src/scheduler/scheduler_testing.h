// Builders for scheduler tests: an in-memory cluster in a line, pending and running jobs, a
// plan checker. Test-only (linked into scheduler tests, never into a product binary).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/plan.h"
#include "scheduler/scheduler.h"

namespace cohort::scheduler::testing {

inline constexpr int64_t kGi = 1024LL * 1024 * 1024;

inline Timestamp Minutes(int64_t m) { return FromMicros(m * 60'000'000); }

// `count` identical idle nodes named prefix-0, prefix-1, ...
inline void AddNodes(ClusterSnapshot& c, const std::string& prefix, int count, int gpus,
                     int64_t cpus = 64, int64_t memory_gi = 512) {
  for (int i = 0; i < count; ++i) {
    NodeCapacity n;
    n.node_id = prefix + "-" + std::to_string(i);
    n.total = Resources{gpus, cpus * 1000, memory_gi * kGi};
    n.free = n.total;
    for (int g = 0; g < gpus; ++g) n.free_gpus.push_back(g);
    c.nodes.push_back(n);
  }
}

// Marks the `gpus` highest free GPUs of node `id` as held by something outside the test.
inline void Occupy(ClusterSnapshot& c, const std::string& id, int gpus) {
  for (auto& n : c.nodes) {
    if (n.node_id != id) continue;
    n.free.gpus -= gpus;
    n.free_gpus.resize(n.free_gpus.size() - static_cast<size_t>(gpus));
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
  RunningJob r;
  r.job_id = job.job_id;
  r.team = job.team;
  r.user = job.user;
  r.priority = job.priority;
  r.submitted_at = job.submitted_at;
  r.started_at = started;
  r.ends_by = ends_by;
  r.tasks = job.tasks;
  for (size_t t = 0; t < job.tasks.size(); ++t) {
    auto node = std::find_if(c.nodes.begin(), c.nodes.end(),
                             [&](const NodeCapacity& n) { return n.node_id == nodes[t]; });
    COHORT_CHECK(node != c.nodes.end());
    TaskPlacement p{nodes[t], {}};
    for (int64_t g = 0; g < job.tasks[t].resources.gpus; ++g) {
      COHORT_CHECK(!node->free_gpus.empty());
      p.gpus.push_back(node->free_gpus.front());
      node->free_gpus.erase(node->free_gpus.begin());
    }
    node->free -= job.tasks[t].resources;
    COHORT_CHECK(node->free.gpus >= 0 && node->free.milli_cpus >= 0);
    r.placement.push_back(p);
  }
  c.running.push_back(r);
  return c.running.back();
}

inline Plan RunScheduler(const ClusterSnapshot& c, const std::vector<PendingJob>& pending,
                         SchedulerConfig config = {}, Timestamp now = FromMicros(0)) {
  return NewScheduler(config)->Schedule(SchedulingInput{c, pending, now});
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

inline const PendingReason* ReasonFor(const Plan& plan, JobId id) {
  for (const auto& w : plan.waiting) {
    if (w.job_id == id) return &w;
  }
  return nullptr;
}

}  // namespace cohort::scheduler::testing
