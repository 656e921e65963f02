#include "scheduler/pass_state.h"

#include <fmt/format.h>

#include <algorithm>

namespace cohort::scheduler {

std::string Gpus(int64_t n) { return fmt::format("{} GPU{}", n, n == 1 ? "" : "s"); }

std::vector<DistinctGroup> DistinctGroupsOf(const std::vector<TaskRequest>& tasks) {
  std::vector<DistinctGroup> groups;
  for (const auto& t : tasks) {
    if (!t.distinct_nodes) continue;
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const DistinctGroup& d) { return d.role == t.role; });
    if (g == groups.end()) g = groups.insert(groups.end(), DistinctGroup{t.role, 0, {}});
    ++g->replicas;
    g->per_replica.gpus = std::max(g->per_replica.gpus, t.resources.gpus);
    g->per_replica.milli_cpus = std::max(g->per_replica.milli_cpus, t.resources.milli_cpus);
    g->per_replica.memory_bytes = std::max(g->per_replica.memory_bytes, t.resources.memory_bytes);
  }
  return groups;
}

PassState::PassState(const SchedulerConfig& config, const SchedulingInput& in, PassResidue* residue,
                     Indexes& indexes)
    : config(config),
      in(in),
      residue(residue),
      running(RunningJobs(in.cluster, in.running)),
      running_teams(TeamsOf(running)),
      order(config, in.cluster, running, running_teams, in.pending, in.now),
      free(indexes.free),
      unreserved(indexes.unreserved),
      guaranteed(indexes.guaranteed) {
  free.Reset(in.cluster.nodes);
  unreserved.Reset(in.cluster.nodes);
  guaranteed.Reset(in.cluster.nodes);
  plan.waiting.reserve(in.pending.size());  // most of a deep queue waits
  ReadNodes();
  ReadRunning();
}

void PassState::ReadNodes() {
  for (const auto& n : in.cluster.nodes) {
    auto shape = std::find(shapes.begin(), shapes.end(), n.total);
    if (shape == shapes.end()) {
      shapes.push_back(n.total);
      shape_nodes.push_back(1);
    } else {
      ++shape_nodes[static_cast<size_t>(shape - shapes.begin())];
    }
    largest_node.gpus = std::max(largest_node.gpus, n.total.gpus);
    largest_node.milli_cpus = std::max(largest_node.milli_cpus, n.total.milli_cpus);
    largest_node.memory_bytes = std::max(largest_node.memory_bytes, n.total.memory_bytes);
    cluster_total += n.total;
  }
}

void PassState::ReadRunning() {
  // By team (RunningTeams): the lowest priority running, and the GPUs on their way out.
  size_t teams = running_teams.names.size();
  std::vector<std::optional<int>> lowest(teams);
  std::vector<std::optional<int64_t>> leaving(teams);
  for (size_t i = 0; i < running.size(); ++i) {
    const RunningJob& r = *running[i];
    uint32_t team = running_teams.of[i];
    if (r.stopping) {
      stopping.push_back(&r);
      leaving[team] = leaving[team].value_or(0) + r.Total().gpus;
    } else {
      lowest[team] = std::min(lowest[team].value_or(r.priority), r.priority);
    }
  }
  for (size_t t = 0; t < teams; ++t) {
    std::string name(running_teams.names[t]);
    if (lowest[t]) lowest_priority.emplace(name, *lowest[t]);
    // Quota reclaim counts what is on its way out as gone (and, below, as held by the job it
    // stops for).
    if (leaving[t]) reclaim_delta[name] -= *leaving[t];
  }
  std::set<JobId> stopped_for;
  for (const RunningJob* r : stopping) {
    int64_t gpus = r->Total().gpus;
    if (r->stopping_for) stopped_for.insert(*r->stopping_for);
    Coming& coming = r->stopping_for ? coming_for[*r->stopping_for] : coming_for_anyone;
    ++coming.jobs;
    coming.gpus += gpus;
  }
  if (!stopped_for.empty()) {
    for (const auto& p : in.pending) {
      if (!stopped_for.count(p.job_id)) continue;
      reclaim_delta[p.team] += TotalOf(p.tasks).gpus;
      claimants.insert(p.job_id);
    }
  }
  for (const auto& [team, priority] : lowest_priority) {  // every team with running jobs
    any_team_borrows |= Entitled(team) > order.TeamUsage(team).guaranteed_gpus;
  }
}

void PassState::Recheck(Timestamp at) {
  if (at > in.now && (!plan.recheck_at || at < *plan.recheck_at)) plan.recheck_at = at;
}

Duration PassState::AttainedNow(const RunningJob& r) const {
  return r.attained + (in.now - r.started_at) * r.Total().gpus;
}

int64_t PassState::Entitled(const std::string& team) const {
  auto it = reclaim_delta.find(team);
  return order.TeamUsage(team).held.gpus + (it == reclaim_delta.end() ? 0 : it->second);
}

std::optional<Timestamp> PassState::ExpectedEnd(Timestamp start, const PendingJob& job) const {
  if (IsOracle(config.policy) && job.oracle_remaining) return start + *job.oracle_remaining;
  if (job.max_runtime) return start + *job.max_runtime;
  if (config.default_runtime) return start + *config.default_runtime;
  return std::nullopt;
}

void PassState::Wait(const PendingJob& job, std::string reason, bool unschedulable,
                     std::optional<Timestamp> reserved) {
  if (residue && !unschedulable) {
    PassResidue::Waiting w;
    w.job_id = job.job_id;
    for (const auto& t : job.tasks) {
      w.gpus += t.resources.gpus;
      w.largest_task = std::max(w.largest_task, t.resources.gpus);
    }
    queue.push_back(w);
  }
  if (!in.reasons) reason.clear();
  plan.waiting.push_back(PendingReason{job.job_id, std::move(reason), unschedulable, reserved});
}

const std::string& PassState::Busy(const PendingJob& job) {
  if (!AnyOnDistinctNodes(job.tasks)) return BusyText(job);
  return BusyApartText(job);
}

const std::string& PassState::BusyApartText(const PendingJob& job) {
  const std::string& text = BusyText(job);
  if (!in.reasons) return text;
  apart_text_ = text;
  for (const DistinctGroup& g : DistinctGroupsOf(job.tasks)) {
    size_t room = NodesWithRoomFor(g.per_replica, job.constraints);
    if (room >= g.replicas) continue;
    apart_text_ += fmt::format(
        "; its {} {} replicas need a node each (distinct_nodes), and {} {} "
        "room for one",
        g.replicas, g.role, room, room == 1 ? "node has" : "nodes have");
  }
  return apart_text_;
}

size_t PassState::NodesWithRoomFor(const Resources& r, const Constraints& constraints) {
  auto count = [&] {
    return static_cast<size_t>(std::count_if(
        free.nodes().begin(), free.nodes().end(),
        [&](const NodeCapacity& n) { return r.FitsIn(n.free) && Meets(n, constraints); }));
  };
  if (!constraints.empty()) return count();
  auto it = room_for_.find(r);
  if (it == room_for_.end()) it = room_for_.emplace(r, count()).first;
  return it->second;
}

const std::string& PassState::BusyText(const PendingJob& job) {
  static const std::string kNoText;
  if (!in.reasons) return kNoText;
  if (busy_texts_free_ != free.free_gpus()) {
    busy_texts_.clear();
    room_for_.clear();
    busy_texts_free_ = free.free_gpus();
  }
  Resources need = TotalOf(job.tasks);
  auto key = std::make_pair(need, job.tasks.size());
  auto it = busy_texts_.find(key);
  if (it != busy_texts_.end()) return it->second;
  std::string gang = job.tasks.size() > 1
                         ? fmt::format("{} tasks started together", job.tasks.size())
                         : std::string("1 task");
  const NodeCapacity* largest = free.largest_free_node();
  return busy_texts_[key] = fmt::format(
             "waiting for resources: needs {} ({}); {} free, the largest free block is {} on {}",
             need.ToString(), gang, Gpus(free.free_gpus()), Gpus(free.largest_free_block()),
             largest ? largest->node_id : "-");
}

}  // namespace cohort::scheduler
