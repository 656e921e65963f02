// Elastic jobs (docs/scheduler.md, "Elastic jobs"): a waiting job that does not fit takes
// surplus replicas back from elastic jobs (above their minimum, past the minimum run time)
// before anything is preempted; at the end of a pass, elastic jobs grow into GPUs that nobody
// else wants now.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "model/plan.h"
#include "scheduler/pass_state.h"

namespace cohort::scheduler {

class ElasticReplicas {
 public:
  explicit ElasticReplicas(PassState& state) : s_(state) {}

  // Takes surplus replicas back from elastic jobs if that lets `job` fit: returns true if it
  // did (the job waits for them to stop, holding where it will start).
  bool TryShrink(const PendingJob& job);

  // Elastic jobs grow into GPUs that nobody else wants now (not free for a waiting job, not
  // held for a reservation), one replica at a time, up to their maximum and their team's limit;
  // a group with distinct_nodes only onto nodes that hold none of its replicas.
  void Grow();

  // Surplus replicas of elastic jobs (above their minimum, past the minimum run time), one
  // unit each (a RunningJob of one task), built on first need. They go before any job is
  // preempted.
  const std::vector<RunningJob>& Surplus();

 private:
  void AddSurplusOf(const RunningJob& r, const RunningJob::ElasticGroup& group);
  // Surplus replicas not taken yet this pass, in the order they are taken.
  std::vector<const RunningJob*> UnitsToTake();
  // Shrinks the jobs of `chosen` for `job`, which claims `placement` (if any) and waits.
  void ShrinkFor(const PendingJob& job, const std::vector<const RunningJob*>& chosen,
                 const std::optional<std::vector<TaskPlacement>>& placement);
  void GrowJob(const RunningJob& r);
  // The job's constraints, keeping it off every node where a replica of `role` runs, those on
  // their way out included: where a group with distinct_nodes may grow.
  Constraints KeptApart(const RunningJob& r, const std::string& role) const;

  PassState& s_;
  std::optional<std::vector<RunningJob>> surplus_;
  std::set<std::tuple<JobId, std::string, int>> shrunk_;  // (job, role, index) taken this pass
  std::set<JobId> shrinking_jobs_;
};

}  // namespace cohort::scheduler
