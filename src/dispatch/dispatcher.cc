#include "dispatch/dispatcher.h"

namespace cohort::dispatch {

Dispatcher::Dispatcher(std::unique_ptr<scheduler::Scheduler> scheduler, size_t incremental_above)
    : scheduler_(std::move(scheduler)), incremental_above_(incremental_above) {}

PassResult Dispatcher::FullPass(cluster::ClusterState& cluster, std::vector<PendingJob>& pending,
                                Timestamp now) {
  residue_.reset();
  full_pass_due_ = false;
  PassResult result;
  if (pending.empty() && !cluster.AnyElasticCanGrow()) return result;
  for (auto& job : pending) job.preempted_for_it = cluster.Claimed(job.job_id);
  cluster.View(snapshot_, running_);
  scheduler::SchedulingInput input{snapshot_, pending, now, &running_, reasons_};
  Plan plan;
  std::optional<scheduler::PassResidue> residue;
  if (incremental_above_ == kNeverIncremental) {
    plan = scheduler_->Schedule(input);
  } else {
    residue.emplace();
    plan = scheduler_->Schedule(input, *residue);
  }
  result.ran = true;
  result.applied = cluster.Apply(plan, pending, now);
  if (result.applied.consistent && residue) residue_ = std::move(residue);
  result.waiting = std::move(plan.waiting);
  result.recheck_at = plan.recheck_at;
  return result;
}

std::optional<std::vector<TaskPlacement>> Dispatcher::Arrive(cluster::ClusterState& cluster,
                                                             const PendingJob& job, Timestamp now,
                                                             std::string* reason) {
  full_pass_due_ = true;
  if (!residue_) {
    *reason = "waiting for the next scheduling pass";
    return std::nullopt;
  }
  auto placement = scheduler::DecideArrival(*residue_, job, now, reason);
  if (!placement) return std::nullopt;
  if (!cluster.Start(job, *placement, now)) {
    Invalidate();
    *reason = "waiting for the next scheduling pass";
    return std::nullopt;
  }
  return placement;
}

std::vector<JobPlacement> Dispatcher::Released(
    cluster::ClusterState& cluster, const std::string& team, const std::vector<TaskRequest>& tasks,
    const std::vector<TaskPlacement>& placement,
    const std::function<const PendingJob*(JobId)>& pending, Timestamp now) {
  full_pass_due_ = true;
  std::vector<JobPlacement> started;
  if (!residue_) return started;
  for (auto& p : scheduler::DecideAfterRelease(*residue_, team, tasks, placement, pending, now)) {
    const PendingJob* job = pending(p.job_id);
    if (!job || !cluster.Start(*job, p.tasks, now)) {
      Invalidate();
      break;
    }
    started.push_back(std::move(p));
  }
  return started;
}

}  // namespace cohort::dispatch
