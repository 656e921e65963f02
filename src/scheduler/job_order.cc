#include "scheduler/job_order.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "scheduler/runtime_history.h"

namespace cohort::scheduler {

std::vector<const RunningJob*> RunningJobs(const ClusterSnapshot& cluster,
                                           const std::vector<const RunningJob*>* running) {
  if (running) return *running;
  std::vector<const RunningJob*> out;
  out.reserve(cluster.running.size());
  for (const auto& r : cluster.running) out.push_back(&r);
  return out;
}

RunningTeams TeamsOf(const std::vector<const RunningJob*>& running) {
  RunningTeams teams;
  teams.of.reserve(running.size());
  std::unordered_map<std::string_view, uint32_t> index;
  for (const RunningJob* r : running) {
    auto [it, added] = index.try_emplace(r->team, static_cast<uint32_t>(teams.names.size()));
    if (added) teams.names.push_back(r->team);
    teams.of.push_back(it->second);
  }
  return teams;
}

int LasQueue(Duration attained, const std::vector<Duration>& thresholds) {
  int queue = 0;
  for (Duration t : thresholds) queue += attained >= t ? 1 : 0;
  return queue;
}

namespace {
template <typename Job>
int64_t GpusOf(const Job& job) {
  int64_t gpus = 0;
  for (const auto& t : job.tasks) gpus += t.resources.gpus;
  return std::max<int64_t>(gpus, 1);  // a CPU-only job still takes time
}
}  // namespace

Duration OracleService(const PendingJob& job) {
  if (!job.oracle_remaining) return Duration::max();
  return *job.oracle_remaining * GpusOf(job);
}

Duration OracleService(const RunningJob& job, Timestamp now) {
  if (!job.oracle_ends_at) return Duration::max();
  return std::max(Duration{}, *job.oracle_ends_at - now) * GpusOf(job);
}

Timestamp PromotionTime(const SchedulerConfig& config, Timestamp since, Duration attained,
                        int64_t gpus) {
  // The time it has run, whatever its size: GPU time over GPUs.
  Duration ran = attained / std::max<int64_t>(gpus, 1);
  auto relative = std::chrono::duration_cast<Duration>(ran * config.promote_factor);
  return since + std::min(config.max_wait, std::max(config.promote_after, relative));
}

bool IsPromoted(const SchedulerConfig& config, const PendingJob& job, Timestamp now) {
  Timestamp since = job.waiting_since ? *job.waiting_since : job.submitted_at;
  return now >= PromotionTime(config, since, job.attained, GpusOf(job));
}

bool IsProtected(const SchedulerConfig& config, const RunningJob& job, Timestamp now) {
  if (now - job.started_at >= config.protected_quantum) return false;
  if (job.last_checkpoint_at && *job.last_checkpoint_at > job.started_at) return false;
  Timestamp since = job.waiting_since ? *job.waiting_since : job.submitted_at;
  return job.started_at >= PromotionTime(config, since, job.attained, GpusOf(job));
}

bool MayPreemptForLevel(const SchedulerConfig& config, const RunningJob& r, const PendingJob& job,
                        Timestamp now) {
  if (r.team != job.team || IsProtected(config, r, now)) return false;
  Duration attained = r.attained + (now - r.started_at) * GpusOf(r);
  return LasQueue(attained, config.las_thresholds) >= config.min_victim_level;
}

Rank RankOf(const SchedulerConfig& config, const PendingJob& job, Timestamp now) {
  Rank r;
  Timestamp since = job.waiting_since ? *job.waiting_since : job.submitted_at;
  Timestamp promoted_at = PromotionTime(config, since, job.attained, GpusOf(job));
  if (now >= promoted_at) {
    r.promoted = 0;
    r.promoted_at = promoted_at;
  }
  r.submitted_at = job.submitted_at;
  r.job_id = job.job_id;
  // Among promoted jobs, the longest waiting first: what is left no longer decides.
  if (r.promoted == 0) return r;
  r.level = LasQueue(job.attained, config.las_thresholds);
  r.expected_left = ExpectedRemaining(job.estimate, job.attained);
  return r;
}

JobOrder::JobOrder(const SchedulerConfig& config, const ClusterSnapshot& cluster,
                   const std::vector<const RunningJob*>& running, const RunningTeams& running_teams,
                   const std::vector<PendingJob>& pending, Timestamp now)
    : policy_(config.policy), pending_(pending) {
  for (const auto& n : cluster.nodes) capacity_ += n.total;
  for (const auto& t : cluster.teams) {
    teams_[t.name].guaranteed_gpus = t.guaranteed_gpus;
    teams_[t.name].max_gpus = t.max_gpus;
  }
  std::vector<Resources> held(running_teams.names.size());
  for (size_t i = 0; i < running.size(); ++i) held[running_teams.of[i]] += running[i]->Total();
  for (size_t t = 0; t < held.size(); ++t) {
    teams_[std::string(running_teams.names[t])].held += held[t];
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
    ranks_.resize(pending.size());
    gpus_.resize(pending.size());
    for (size_t i = 0; i < pending.size(); ++i) {
      if (pending[i].preempted_for_it) continue;
      ranks_[i] = RankOf(config, pending[i], now);
      gpus_[i] = TotalOf(pending[i].tasks).gpus;
      queues_[pending[i].team].jobs.push_back(i);
    }
    for (auto& [team, q] : queues_) {
      q.usage = &teams_[team];  // every team with work has an entry
      std::sort(q.jobs.begin(), q.jobs.end(), [&](size_t a, size_t b) {
        if (pending[a].priority != pending[b].priority) {
          return pending[a].priority > pending[b].priority;
        }
        return ranks_[a] < ranks_[b];
      });
    }
    return;
  }
  // Each job's key worked out once, in one compact array kept as a heap: a pass often needs only
  // the first few in order (under strict fifo, every job behind a blocked head waits whatever its
  // place: Rest()), and a heap costs O(n) to build where a sort costs O(n log n) every pass.
  // The key: queue under las, true GPU time left under the oracles, submission, id.
  static_keys_.reserve(pending.size());
  for (size_t i = 0; i < pending.size(); ++i) {
    const PendingJob& p = pending[i];
    if (p.preempted_for_it) continue;
    StaticKey k;
    if (policy_ == Policy::kLeastAttainedService)
      k.queue = LasQueue(p.attained, config.las_thresholds);
    if (IsOracle(policy_)) k.service = OracleService(p);
    k.submitted_at = p.submitted_at;
    k.job_id = p.job_id;
    k.index = i;
    static_keys_.push_back(k);
  }
  std::make_heap(static_keys_.begin(), static_keys_.end(), StaticKey::After);
}

std::vector<size_t> ConsiderationOrder(const SchedulerConfig& config,
                                       const ClusterSnapshot& cluster,
                                       const std::vector<PendingJob>& pending, Timestamp now) {
  std::vector<const RunningJob*> running = RunningJobs(cluster, nullptr);
  JobOrder order(config, cluster, running, TeamsOf(running), pending, now);
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
      return "teams below their guarantee first, the furthest below first; then, within a team "
             "and beyond guarantees, priority (within a team), jobs promoted for waiting long, "
             "least GPU time received (in levels), least expected GPU time left (from finished "
             "jobs like it), submission order";
    case Policy::kFifo:
      return "submission order";
    case Policy::kLeastAttainedService:
      return "least GPU time received first, then submission order";
    case Policy::kSjfOracle:
    case Policy::kSrtfOracle:
      return "least true GPU time left first (an oracle: simulation only), then submission order";
  }
  return "";
}

const Usage& JobOrder::TeamUsage(const std::string& team) const {
  auto it = teams_.find(team);
  return it == teams_.end() ? unknown_team_ : it->second;
}

double JobOrder::DominantShare(const std::string& team) const {
  return ShareOf(TeamUsage(team).held);
}

double JobOrder::ShareOf(const Resources& held) const {
  auto share = [](int64_t used, int64_t total) {
    return total > 0 ? static_cast<double>(used) / static_cast<double>(total) : 0.0;
  };
  return std::max({share(held.gpus, capacity_.gpus), share(held.milli_cpus, capacity_.milli_cpus),
                   share(held.memory_bytes, capacity_.memory_bytes)});
}

void JobOrder::Placed(size_t i) {
  const PendingJob& job = pending_[i];
  teams_[job.team].held += TotalOf(job.tasks);
}

void JobOrder::Grew(const std::string& team, const Resources& r) { teams_[team].held += r; }

std::optional<size_t> JobOrder::Next() {
  if (next_first_ < first_.size()) return first_[next_first_++];
  if (policy_ == Policy::kFairShare) return NextFairShare();
  if (static_keys_.empty()) return std::nullopt;
  std::pop_heap(static_keys_.begin(), static_keys_.end(), StaticKey::After);
  size_t index = static_keys_.back().index;
  static_keys_.pop_back();
  return index;
}

std::vector<size_t> JobOrder::Rest() {
  std::vector<size_t> rest;
  if (policy_ == Policy::kFairShare || next_first_ < first_.size()) {
    while (auto next = Next()) rest.push_back(*next);
    return rest;
  }
  rest.reserve(static_keys_.size());
  for (const StaticKey& k : static_keys_) rest.push_back(k.index);
  static_keys_.clear();
  return rest;
}

std::optional<size_t> JobOrder::NextFairShare() {
  // Teams below their guarantee first, if their next job fits in what is left of it: the
  // furthest behind (lowest dominant share per guaranteed GPU, then by name, so that it is
  // deterministic). A job that would take its team beyond its guarantee borrows, and ranks with
  // the other borrowers: a team guaranteed 10 GPUs that holds none does not go ahead of every
  // team's guaranteed work with a job of 32 (it took the few reservations, and jobs within
  // their guarantee waited hours for nodes that small jobs kept fragmented). Beyond guarantees,
  // the team whose next job ranks first.
  const std::string* behind = nullptr;
  double behind_share = 0;
  TeamQueue* best = nullptr;
  for (auto& [team, queue] : queues_) {
    if (queue.empty()) continue;
    const Usage& u = *queue.usage;
    size_t head = queue.jobs[queue.next];
    if (u.held.gpus < u.guaranteed_gpus && u.held.gpus + gpus_[head] <= u.guaranteed_gpus) {
      double weight = static_cast<double>(std::max<int64_t>(u.guaranteed_gpus, 1));
      double share = ShareOf(u.held) / weight;
      if (!behind || share < behind_share) {
        behind = &team;
        behind_share = share;
      }
    }
    if (!best || ranks_[head] < ranks_[best->jobs[best->next]]) best = &queue;
  }
  if (behind) best = &queues_.at(*behind);
  if (!best) return std::nullopt;
  return best->jobs[best->next++];
}

}  // namespace cohort::scheduler
