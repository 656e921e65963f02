#include "scheduler/levels.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "scheduler/job_order.h"

namespace cohort::scheduler {

bool Levels::UsesLevels() const {
  return s_.config.policy == Policy::kLeastAttainedService ||
         s_.config.policy == Policy::kFairShare;
}

void Levels::Read() {
  if (UsesLevels()) ReadRunningLevels();
  if (s_.config.policy == Policy::kSrtfOracle) ReadServiceLeft();
  if (s_.config.policy == Policy::kFairShare) RecheckAtPromotions();
}

void Levels::ReadRunningLevels() {
  bool fair = s_.config.policy == Policy::kFairShare;
  std::vector<std::optional<int>> highest(s_.running_teams.names.size());  // by team
  for (size_t i = 0; i < s_.running.size(); ++i) {
    const RunningJob& r = *s_.running[i];
    if (r.stopping) continue;
    Duration attained = s_.AttainedNow(r);
    if (fair && IsProtected(s_.config, r, s_.in.now)) {
      // It may be preempted for a level once its protection ends.
      if (!s_.in.pending.empty()) s_.Recheck(r.started_at + s_.config.protected_quantum);
      continue;
    }
    int level = LasQueue(attained, s_.config.las_thresholds);
    highest_las_queue_ = std::max(highest_las_queue_, level);
    std::optional<int>& team_highest = highest[s_.running_teams.of[i]];
    team_highest = std::max(team_highest.value_or(0), level);
    RecheckAtNextThreshold(r, attained);
  }
  if (fair) {
    for (size_t t = 0; t < highest.size(); ++t) {
      if (highest[t]) highest_level_.emplace(std::string(s_.running_teams.names[t]), *highest[t]);
    }
  }
}

void Levels::RecheckAtNextThreshold(const RunningJob& r, Duration attained) {
  int64_t gpus = r.Total().gpus;
  for (Duration t : s_.config.las_thresholds) {
    if (t > attained && gpus > 0 && !s_.in.pending.empty()) {
      s_.Recheck(s_.in.now + Duration(((t - attained).count() + gpus - 1) / gpus));
      break;
    }
  }
}

void Levels::ReadServiceLeft() {
  for (const RunningJob* job : s_.running) {
    const RunningJob& r = *job;
    if (!r.stopping) most_service_left_ = std::max(most_service_left_, OracleService(r, s_.in.now));
  }
}

void Levels::RecheckAtPromotions() {
  for (const auto& p : s_.in.pending) {
    Timestamp since = p.waiting_since ? *p.waiting_since : p.submitted_at;
    s_.Recheck(PromotionTime(s_.config, since, p.attained, TotalOf(p.tasks).gpus));
  }
}

LevelRights Levels::RightsOf(const PendingJob& job) {
  LevelRights rights;
  bool las = s_.config.policy == Policy::kLeastAttainedService;
  bool fair = s_.config.policy == Policy::kFairShare;
  if (las) rights.level = LasQueue(job.attained, s_.config.las_thresholds);
  if (fair) rights.level = RankOf(s_.config, job, s_.in.now).level;
  auto highest = highest_level_.find(job.team);
  rights.by_level = (las && rights.level < highest_las_queue_) ||
                    (fair && highest != highest_level_.end() && rights.level < highest->second);
  if (fair && rights.by_level) {
    Timestamp may_preempt = PassState::WaitingSince(job) + s_.config.level_preemption_delay;
    if (s_.in.now < may_preempt) {
      rights.by_level = false;
      s_.Recheck(may_preempt);
    }
  }
  if (s_.config.policy == Policy::kSrtfOracle) {
    rights.service = OracleService(job);
    rights.by_service = rights.service < most_service_left_;
  }
  return rights;
}

bool Levels::MayPreempt(const LevelRights& rights, const PendingJob& job, const RunningJob& r,
                        int queue) const {
  bool las = s_.config.policy == Policy::kLeastAttainedService;
  bool served_more = rights.by_level && queue > rights.level &&
                     (las || MayPreemptForLevel(s_.config, r, job, s_.in.now));
  bool more_left = rights.by_service && OracleService(r, s_.in.now) > rights.service;
  return served_more || more_left;
}

}  // namespace cohort::scheduler
