#include "master/job_views.h"

#include <algorithm>

namespace cohort::master {

std::vector<TaskRequest> TaskRequestsOf(const Job& job) {
  std::vector<TaskRequest> tasks;
  for (const auto& g : job.spec.tasks) {
    for (int i = 0; i < g.replicas; ++i) {
      tasks.push_back(TaskRequest{g.role, i, g.resources, g.distinct_nodes});
    }
  }
  return tasks;
}

bool DistinctNodes(const Job& job, const std::string& role) {
  return std::any_of(job.spec.tasks.begin(), job.spec.tasks.end(),
                     [&](const TaskGroupSpec& g) { return g.role == role && g.distinct_nodes; });
}

Duration AttainedService(const Job& job) {
  Duration total = job.dropped_service;
  for (const auto& a : job.history) total += ServiceOf(job, a);
  return total;
}

std::vector<RunningJob::ElasticGroup> ElasticGroupsOf(const Job& job) {
  std::vector<RunningJob::ElasticGroup> groups;
  for (const auto& g : job.spec.tasks) {
    if (!g.elastic()) continue;
    int next = g.replicas;
    for (const auto& t : job.tasks) {
      if (t.role == g.role) next = std::max(next, t.index + 1);
    }
    groups.push_back(RunningJob::ElasticGroup{g.role, g.replicas, g.max_replicas, g.resources, next,
                                              g.distinct_nodes});
  }
  return groups;
}

scheduler::HistoryKey HistoryKeyOf(const Job& job) {
  return scheduler::HistoryKey{job.spec.team, job.user, job.spec.name,
                               job.spec.TotalResources().gpus};
}

bool TeachesRunTime(const Job& job) {
  if (!IsTerminal(job.state)) return false;
  // A sweep's trial killed (most often stopped early by its searcher, at a rung) ran for as
  // long as the searcher let it, not as long as such a job takes.
  if (job.trial && job.state == JobState::kKilled) return false;
  // Reported running, or ended with the pid of its process: a task whose agent could not start
  // it ends with neither.
  return std::any_of(job.tasks.begin(), job.tasks.end(),
                     [](const Task& t) { return t.started_at.has_value() || t.pid != 0; });
}

}  // namespace cohort::master
