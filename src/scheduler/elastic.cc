#include "scheduler/elastic.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <utility>

#include "scheduler/preemption.h"
#include "scheduler/reservations.h"

namespace cohort::scheduler {

const std::vector<RunningJob>& ElasticReplicas::Surplus() {
  if (surplus_) return *surplus_;
  surplus_.emplace();
  for (const RunningJob* job : s_.running) {
    const RunningJob& r = *job;
    if (r.stopping) continue;
    for (const auto& group : r.elastic) AddSurplusOf(r, group);
  }
  return *surplus_;
}

void ElasticReplicas::AddSurplusOf(const RunningJob& r, const RunningJob::ElasticGroup& group) {
  std::vector<size_t> replicas;
  for (size_t t = 0; t < r.tasks.size(); ++t) {
    if (r.tasks[t].role == group.role) replicas.push_back(t);
  }
  if (static_cast<int>(replicas.size()) <= group.min) return;
  std::sort(replicas.begin(), replicas.end(),
            [&](size_t a, size_t b) { return r.tasks[a].index > r.tasks[b].index; });
  replicas.resize(replicas.size() - static_cast<size_t>(group.min));  // highest first
  for (size_t t : replicas) {
    Timestamp started = t < r.task_started.size() ? r.task_started[t] : r.started_at;
    if (s_.in.now - started < s_.config.min_runtime_before_preemption) continue;
    RunningJob unit;
    unit.job_id = r.job_id;
    unit.team = r.team;
    unit.user = r.user;
    unit.priority = r.priority;
    unit.started_at = started;
    unit.tasks = {r.tasks[t]};
    unit.placement = {r.placement[t]};
    surplus_->push_back(std::move(unit));
  }
}

std::vector<const RunningJob*> ElasticReplicas::UnitsToTake() {
  std::vector<const RunningJob*> units;
  for (const RunningJob& u : Surplus()) {
    if (!shrunk_.count({u.job_id, u.tasks[0].role, u.tasks[0].index})) units.push_back(&u);
  }
  // Highest index first (the replicas added last; start times of replicas added together
  // differ by how fast their agent started them, so they do not decide), lowest priority first.
  std::stable_sort(units.begin(), units.end(), [](const RunningJob* a, const RunningJob* b) {
    return std::make_tuple(a->priority, -a->tasks[0].index, -ToMicros(a->started_at), -a->job_id) <
           std::make_tuple(b->priority, -b->tasks[0].index, -ToMicros(b->started_at), -b->job_id);
  });
  return units;
}

bool ElasticReplicas::TryShrink(const PendingJob& job) {
  if (s_.preemption_searches >= kMaxPreemptionSearches) return false;
  std::vector<const RunningJob*> units = UnitsToTake();
  if (units.empty()) return false;
  ++s_.preemption_searches;
  std::optional<std::vector<const RunningJob*>> chosen;
  std::optional<std::vector<TaskPlacement>> placement;
  {
    ScopedWhatIf what_if(s_.unreserved);
    chosen = ChooseVictims(s_.unreserved, job.tasks, job.constraints, units);
    if (chosen) placement = s_.unreserved.Place(job.tasks, job.constraints);
  }
  if (!chosen) return false;
  ShrinkFor(job, *chosen, placement);
  return true;
}

void ElasticReplicas::ShrinkFor(const PendingJob& job, const std::vector<const RunningJob*>& chosen,
                                const std::optional<std::vector<TaskPlacement>>& placement) {
  std::map<std::pair<JobId, std::string>, std::vector<int>> by_group;
  for (const RunningJob* u : chosen) {
    shrunk_.insert({u->job_id, u->tasks[0].role, u->tasks[0].index});
    by_group[{u->job_id, u->tasks[0].role}].push_back(u->tasks[0].index);
  }
  std::vector<std::string> names;
  for (auto& [key, indices] : by_group) {
    std::sort(indices.rbegin(), indices.rend());
    s_.plan.shrinks.push_back(
        Shrink{key.first, key.second, indices, job.job_id,
               fmt::format("{} replica{} released to make room for job {}", indices.size(),
                           indices.size() == 1 ? "" : "s", job.job_id)});
    shrinking_jobs_.insert(key.first);
    names.push_back(fmt::format("{} of job {}", indices.size(), key.first));
  }
  if (placement) Claim(s_, job, *placement);
  s_.Wait(job, fmt::format("taking back elastic replicas ({}); starts once they have stopped",
                           fmt::join(names, ", ")));
}

void ElasticReplicas::Grow() {
  for (const RunningJob* job : s_.running) {
    const RunningJob& r = *job;
    if (r.stopping || r.elastic.empty() || shrinking_jobs_.count(r.job_id)) continue;
    GrowJob(r);
  }
}

Constraints ElasticReplicas::KeptApart(const RunningJob& r, const std::string& role) const {
  Constraints apart = r.constraints;
  auto add_nodes = [&](const RunningJob& part) {
    for (size_t t = 0; t < part.tasks.size() && t < part.placement.size(); ++t) {
      if (part.tasks[t].role == role) apart.excluded_nodes.insert(part.placement[t].node_id);
    }
  };
  add_nodes(r);
  // Replicas on their way out still run where they are: the state lists them as a stopping job
  // of their own with the same id (cluster::ClusterState::View).
  for (const RunningJob* other : s_.running) {
    if (other != &r && other->job_id == r.job_id) add_nodes(*other);
  }
  return apart;
}

void ElasticReplicas::GrowJob(const RunningJob& r) {
  Growth growth;
  growth.job_id = r.job_id;
  for (const auto& group : r.elastic) {
    int current =
        static_cast<int>(std::count_if(r.tasks.begin(), r.tasks.end(),
                                       [&](const TaskRequest& t) { return t.role == group.role; }));
    int next_index = group.next_index;
    // A group whose replicas need a node each grows only onto nodes without one of them.
    std::optional<Constraints> apart;
    for (int k = current; k < group.max; ++k) {
      const Usage& team = s_.order.TeamUsage(r.team);
      if (team.max_gpus && team.held.gpus + group.per_replica.gpus > *team.max_gpus) break;
      if (group.distinct_nodes && !apart) apart = KeptApart(r, group.role);
      std::vector<TaskRequest> one = {
          TaskRequest{group.role, next_index, group.per_replica, group.distinct_nodes}};
      auto placement = s_.unreserved.Place(one, apart ? *apart : r.constraints);
      if (!placement) break;
      s_.free.Take(one, *placement);
      s_.unreserved.Take(one, *placement);
      s_.order.Grew(r.team, group.per_replica);
      if (apart) apart->excluded_nodes.insert((*placement)[0].node_id);
      growth.tasks.push_back(one[0]);
      growth.placement.push_back((*placement)[0]);
      ++next_index;
    }
  }
  if (!growth.tasks.empty()) s_.plan.growths.push_back(std::move(growth));
}

}  // namespace cohort::scheduler
