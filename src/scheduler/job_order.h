// The order in which one scheduling pass considers pending jobs, per policy. For fair share the
// order moves as the pass places jobs: a team that just got GPUs drops back.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "model/plan.h"
#include "scheduler/scheduler.h"

namespace cohort::scheduler {

// What a team holds: running and stopping jobs, plus what this pass has placed so far.
struct Usage {
  Resources held;
  int64_t guaranteed_gpus = 0;
  std::optional<int64_t> max_gpus;
};

// The jobs that hold resources, for a pass: `running` if given (SchedulingInput::running), else
// the snapshot's own.
std::vector<const RunningJob*> RunningJobs(const ClusterSnapshot& cluster,
                                           const std::vector<const RunningJob*>* running);

// The teams of the jobs that hold resources as dense indices, so that a pass looks each job's
// team up once: running job i's team is names[of[i]]. The names point into the jobs.
struct RunningTeams {
  std::vector<std::string_view> names;  // in the order they first appear
  std::vector<uint32_t> of;             // by position in the running list
};
RunningTeams TeamsOf(const std::vector<const RunningJob*>& running);

// The least-attained-service queue of a job that has had `attained` GPU time.
int LasQueue(Duration attained, const std::vector<Duration>& thresholds);

// Default policy, starvation: when a job that began waiting at `since`, having had `attained` GPU
// time on `gpus` GPUs, is promoted (SchedulerConfig::promote_after and what follows).
Timestamp PromotionTime(const SchedulerConfig& config, Timestamp since, Duration attained,
                        int64_t gpus);
bool IsPromoted(const SchedulerConfig& config, const PendingJob& job, Timestamp now);
// A running job that started promoted, within its protected quantum and with no checkpoint since
// it started: not preempted for a job of an earlier level.
bool IsProtected(const SchedulerConfig& config, const RunningJob& job, Timestamp now);

// Default policy: whether running job `r`, already of a later level than waiting job `job`, may
// be preempted for it (same team, not protected, of at least min_victim_level).
bool MayPreemptForLevel(const SchedulerConfig& config, const RunningJob& r, const PendingJob& job,
                        Timestamp now);

// Where the default policy puts a job among others (lower first), beyond its team and priority.
struct Rank {
  int promoted = 1;                          // 0: promoted
  Timestamp promoted_at{};                   // promoted jobs: the longest waiting first
  int level = 0;                             // least-attained-service level (a promoted job: 0)
  Duration expected_left = Duration::max();  // from its estimate (ExpectedRemaining)
  Timestamp submitted_at;
  JobId job_id = 0;
  auto operator<=>(const Rank&) const = default;
};
Rank RankOf(const SchedulerConfig& config, const PendingJob& job, Timestamp now);

// The oracle policies' key: the GPU time a job truly has left (run time x GPUs); unknown: the
// largest.
Duration OracleService(const PendingJob& job);
Duration OracleService(const RunningJob& job, Timestamp now);

// Every pending job (indices into `pending`) in the order a pass under `config`'s policy
// considers them, as if each started when its turn came (under fair share a team that has just
// been served moves back). What `cohort why` says about who is ahead comes from here, so that it
// is the policy's own answer.
std::vector<size_t> ConsiderationOrder(const SchedulerConfig& config,
                                       const ClusterSnapshot& cluster,
                                       const std::vector<PendingJob>& pending, Timestamp now);
// The policy's order in words, for people.
std::string DescribeOrder(Policy policy);

class JobOrder {
 public:
  // `cluster`: its nodes and teams; `running`: the jobs that hold resources (RunningJobs()),
  // and their teams (TeamsOf()).
  JobOrder(const SchedulerConfig& config, const ClusterSnapshot& cluster,
           const std::vector<const RunningJob*>& running, const RunningTeams& running_teams,
           const std::vector<PendingJob>& pending, Timestamp now);

  // The index (into `pending`) of the next job to consider; every job comes exactly once.
  std::optional<size_t> Next();
  // Every job not yet returned, in no particular order (cheaper than Next() to the end).
  std::vector<size_t> Rest();
  // Job `i` was placed: its team holds more now.
  void Placed(size_t i);
  // Resources given outside the queue (an elastic job grew).
  void Grew(const std::string& team, const Resources& r);

  const Usage& TeamUsage(const std::string& team) const;
  const std::map<std::string, Usage>& Teams() const { return teams_; }
  // A team's dominant share of the cluster (0..1), before weighting.
  double DominantShare(const std::string& team) const;

 private:
  struct TeamQueue {
    std::vector<size_t> jobs;  // priority (highest first), then Rank
    size_t next = 0;
    const Usage* usage = nullptr;  // the team's entry of teams_
    bool empty() const { return next >= jobs.size(); }
  };

  std::optional<size_t> NextFairShare();
  // DominantShare of what a team holds.
  double ShareOf(const Resources& held) const;

  Policy policy_;
  const std::vector<PendingJob>& pending_;
  Resources capacity_;
  std::map<std::string, Usage> teams_;
  std::map<std::string, TeamQueue> queues_;  // fair share
  std::vector<Rank> ranks_;                  // fair share, by job
  std::vector<int64_t> gpus_;                // fair share, by job: the GPUs it needs
  // fifo, las, the oracles: what orders a job, and where it is.
  struct StaticKey {
    int queue = 0;
    Duration service{};
    Timestamp submitted_at;
    JobId job_id = 0;
    size_t index = 0;
    // Heap order: the job to consider first is on top.
    static bool After(const StaticKey& a, const StaticKey& b) {
      return std::tie(a.queue, a.service, a.submitted_at, a.job_id) >
             std::tie(b.queue, b.service, b.submitted_at, b.job_id);
    }
  };
  std::vector<StaticKey> static_keys_;  // a heap (StaticKey::After)
  std::vector<size_t> first_;           // jobs that others were preempted for, before any other
  size_t next_first_ = 0;
  Usage unknown_team_;
};

}  // namespace cohort::scheduler
