#include "scheduler/job_order.h"

#include <algorithm>
#include <tuple>

namespace cohort::scheduler {

int LasQueue(Duration attained, const std::vector<Duration>& thresholds) {
  int queue = 0;
  for (Duration t : thresholds) queue += attained >= t ? 1 : 0;
  return queue;
}

JobOrder::JobOrder(Policy policy, const ClusterSnapshot& cluster,
                   const std::vector<PendingJob>& pending,
                   const std::vector<Duration>& las_thresholds)
    : policy_(policy), pending_(pending) {
  for (const auto& n : cluster.nodes) capacity_ += n.total;
  for (const auto& t : cluster.teams) {
    teams_[t.name].guaranteed_gpus = t.guaranteed_gpus;
    teams_[t.name].max_gpus = t.max_gpus;
  }
  for (const auto& r : cluster.running) {
    Resources held = r.Total();
    teams_[r.team].held += held;
    users_[{r.team, r.user}] += held;
  }
  auto by_submission = [&](size_t a, size_t b) {
    return std::tie(pending[a].submitted_at, pending[a].job_id) <
           std::tie(pending[b].submitted_at, pending[b].job_id);
  };
  for (size_t i = 0; i < pending.size(); ++i) {
    if (pending[i].preempted_for_it) first_.push_back(i);
  }
  std::sort(first_.begin(), first_.end(), by_submission);
  if (policy_ == Policy::kFairShare) {
    for (size_t i = 0; i < pending.size(); ++i) {
      if (pending[i].preempted_for_it) continue;
      TeamQueue& q = queues_[pending[i].team];
      q.levels[pending[i].priority][pending[i].user].push_back(i);
      ++q.remaining;
    }
    for (auto& [team, q] : queues_) {
      teams_[team];  // every team with work has an entry
      for (auto& [prio, users] : q.levels) {
        for (auto& [user, jobs] : users) {
          std::sort(jobs.begin(), jobs.end(), [&](size_t a, size_t b) {
            return std::tie(pending[a].submitted_at, pending[a].job_id) >
                   std::tie(pending[b].submitted_at, pending[b].job_id);  // back() is first
          });
        }
      }
    }
    return;
  }
  for (size_t i = 0; i < pending.size(); ++i) {
    if (!pending[i].preempted_for_it) static_order_.push_back(i);
  }
  std::sort(static_order_.begin(), static_order_.end(), [&](size_t a, size_t b) {
    const PendingJob& ja = pending[a];
    const PendingJob& jb = pending[b];
    if (policy_ == Policy::kLeastAttainedService) {
      int qa = LasQueue(ja.attained, las_thresholds);
      int qb = LasQueue(jb.attained, las_thresholds);
      if (qa != qb) return qa < qb;
    }
    return by_submission(a, b);
  });
}

std::vector<size_t> ConsiderationOrder(const SchedulerConfig& config,
                                       const ClusterSnapshot& cluster,
                                       const std::vector<PendingJob>& pending) {
  JobOrder order(config.policy, cluster, pending, config.las_thresholds);
  std::vector<size_t> out;
  out.reserve(pending.size());
  while (auto next = order.Next()) {
    out.push_back(*next);
    order.Placed(*next);
  }
  return out;
}

std::string DescribeOrder(Policy policy) {
  switch (policy) {
    case Policy::kFairShare:
      return "teams below their guarantee and with the smallest share first; within a team, "
             "priority, then the user with the least in use, then submission order";
    case Policy::kFifo:
      return "submission order";
    case Policy::kLeastAttainedService:
      return "least GPU time received first, then submission order";
  }
  return "";
}

const Usage& JobOrder::TeamUsage(const std::string& team) const {
  auto it = teams_.find(team);
  return it == teams_.end() ? unknown_team_ : it->second;
}

double JobOrder::DominantShare(const std::string& team) const {
  const Resources& held = TeamUsage(team).held;
  auto share = [](int64_t used, int64_t total) {
    return total > 0 ? static_cast<double>(used) / static_cast<double>(total) : 0.0;
  };
  return std::max({share(held.gpus, capacity_.gpus), share(held.milli_cpus, capacity_.milli_cpus),
                   share(held.memory_bytes, capacity_.memory_bytes)});
}

void JobOrder::Placed(size_t i) {
  const PendingJob& job = pending_[i];
  Resources total;
  for (const auto& t : job.tasks) total += t.resources;
  teams_[job.team].held += total;
  users_[{job.team, job.user}] += total;
}

void JobOrder::Grew(const std::string& team, const std::string& user, const Resources& r) {
  teams_[team].held += r;
  users_[{team, user}] += r;
}

std::optional<size_t> JobOrder::Next() {
  if (next_first_ < first_.size()) return first_[next_first_++];
  if (policy_ == Policy::kFairShare) return NextFairShare();
  if (next_static_ >= static_order_.size()) return std::nullopt;
  return static_order_[next_static_++];
}

std::optional<size_t> JobOrder::NextFairShare() {
  // The team that is furthest behind: below its guarantee before any team that is not, then the
  // lowest dominant share per guaranteed GPU, then by name (deterministic).
  const std::string* best = nullptr;
  std::tuple<int, double> best_key{};
  for (const auto& [team, queue] : queues_) {
    if (queue.remaining == 0) continue;
    const Usage& u = TeamUsage(team);
    int above = u.held.gpus < u.guaranteed_gpus ? 0 : 1;
    double weight = static_cast<double>(std::max<int64_t>(u.guaranteed_gpus, 1));
    std::tuple<int, double> key{above, DominantShare(team) / weight};
    if (!best || key < best_key) {
      best = &team;
      best_key = key;
    }
  }
  if (!best) return std::nullopt;
  return NextInTeam(*best, queues_.at(*best));
}

std::optional<size_t> JobOrder::NextInTeam(const std::string& team, TeamQueue& queue) {
  auto level = queue.levels.begin();
  // Within the highest priority: the user who holds least, then whose next job is oldest.
  auto& users = level->second;
  auto pick = users.end();
  for (auto it = users.begin(); it != users.end(); ++it) {
    if (pick == users.end()) {
      pick = it;
      continue;
    }
    const PendingJob& a = pending_[it->second.back()];
    const PendingJob& b = pending_[pick->second.back()];
    int64_t ua = users_[{team, it->first}].gpus;
    int64_t ub = users_[{team, pick->first}].gpus;
    if (std::tie(ua, a.submitted_at, a.job_id) < std::tie(ub, b.submitted_at, b.job_id)) {
      pick = it;
    }
  }
  size_t job = pick->second.back();
  pick->second.pop_back();
  if (pick->second.empty()) users.erase(pick);
  if (users.empty()) queue.levels.erase(level);
  --queue.remaining;
  return job;
}

}  // namespace cohort::scheduler
