#include "scheduler/victims.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "scheduler/job_order.h"
#include "scheduler/moving.h"
#include "scheduler/reservations.h"

namespace cohort::scheduler {
namespace {

// Under least attained service, victims are the jobs that have had the most GPU time, and the
// policy preempts them on purpose, again and again: there the least progress lost decides
// alone (rotating would preempt jobs that have run longer since their restart: more lost work,
// and more preemptions in all).
// The same holds for srtf-oracle, which preempts the jobs with the most work left.
bool RotateVictims(Policy policy) {
  return policy != Policy::kLeastAttainedService && policy != Policy::kSrtfOracle;
}

// Merges the runs of `found` (each sorted, beginning where `runs` says) into one order, cheapest
// first (keys are unique: the job id decides last).
template <typename Found>
void MergeRuns(Found& found, const std::vector<size_t>& runs) {
  auto by_key = [](const auto& a, const auto& b) { return a.first < b.first; };
  for (size_t i = 1; i < runs.size(); ++i) {
    auto end =
        i + 1 < runs.size() ? found.begin() + static_cast<ptrdiff_t>(runs[i + 1]) : found.end();
    std::inplace_merge(found.begin(), found.begin() + static_cast<ptrdiff_t>(runs[i]), end, by_key);
  }
}

}  // namespace

void SortCheapestFirst(PreemptibleTeam& team) {
  if (team.sorted) return;
  std::sort(team.jobs.begin(), team.jobs.end(),
            [](const Preemptible& a, const Preemptible& b) { return a.key < b.key; });
  team.sorted = true;
}

void PutTrialsBeyondGuaranteeFirst(PreemptibleTeam& team, int64_t borrowed, bool rotate) {
  if (borrowed <= 0) return;
  std::vector<Preemptible*> trials;
  for (Preemptible& p : team.jobs) {
    if (p.job->sweep_trial) trials.push_back(&p);
  }
  std::sort(trials.begin(), trials.end(),
            [](const Preemptible* a, const Preemptible* b) { return a->key < b->key; });
  for (Preemptible* p : trials) {
    if (borrowed <= 0) break;
    p->key = PreemptionCost(*p->job, rotate, /*first=*/true);
    borrowed -= p->gpus;
  }
  team.sorted = false;
}

std::string ReclaimReason(const PendingJob& job, const RunningJob& victim) {
  return fmt::format(
      "preempted by job {}: team {} reclaims its guaranteed GPUs from team {}, which borrows "
      "beyond its own",
      job.job_id, job.team, victim.team);
}

std::vector<PreemptibleTeam>& VictimSearch::PreemptibleTeams() {
  if (preemptible_) return *preemptible_;
  preemptible_.emplace(s_.running_teams.names.size());
  for (size_t t = 0; t < preemptible_->size(); ++t) {
    (*preemptible_)[t].name = s_.running_teams.names[t];
  }
  bool rotate = RotateVictims(s_.config.policy);
  for (size_t i = 0; i < s_.running.size(); ++i) {
    const RunningJob& r = *s_.running[i];
    if (r.stopping) continue;
    PreemptibleTeam& team = (*preemptible_)[s_.running_teams.of[i]];
    if (s_.in.now - r.started_at < s_.config.min_runtime_before_preemption) {
      team.young.push_back(&r);
      continue;
    }
    team.jobs.push_back(Preemptible{PreemptionCost(r, rotate), &r, r.Total().gpus,
                                    LasQueue(s_.AttainedNow(r), s_.config.las_thresholds)});
  }
  std::erase_if(*preemptible_,
                [](const PreemptibleTeam& t) { return t.jobs.empty() && t.young.empty(); });
  for (PreemptibleTeam& team : *preemptible_) {
    PutTrialsBeyondGuaranteeFirst(
        team, s_.Entitled(team.name) - s_.order.TeamUsage(team.name).guaranteed_gpus, rotate);
  }
  return *preemptible_;
}

bool VictimSearch::WaitForStopping(const PendingJob& job) {
  // Jobs on their way out count for this job if they stop for it (or for no one).
  Coming coming = s_.coming_for_anyone;
  if (auto it = s_.coming_for.find(job.job_id); it != s_.coming_for.end()) {
    coming.jobs += it->second.jobs;
    coming.gpus += it->second.gpus;
  }
  // Cheap tests first; a look costs a what-if and shares the search budget.
  if (coming.jobs == 0 || s_.unreserved.free_gpus() + coming.gpus < TotalOf(job.tasks).gpus ||
      s_.preemption_searches >= kMaxPreemptionSearches) {
    return false;
  }
  std::vector<const RunningJob*> stopping;
  for (const RunningJob* r : s_.stopping) {
    if (!r->stopping_for || *r->stopping_for == job.job_id) stopping.push_back(r);
  }
  ++s_.preemption_searches;
  std::optional<std::vector<TaskPlacement>> placement;
  {
    ScopedWhatIf what_if(s_.unreserved);
    for (const RunningJob* r : stopping) s_.unreserved.Give(r->tasks, r->placement);
    placement = s_.unreserved.Place(job.tasks, job.constraints);
  }
  if (!placement) return false;
  Claim(s_, job, *placement);
  s_.Wait(job, fmt::format("waiting for {} stopping job{} to free their resources", stopping.size(),
                           stopping.size() == 1 ? "" : "s"));
  return true;
}

PreemptionRights VictimSearch::RightsOf(const PendingJob& job) {
  PreemptionRights rights;
  const Usage& team = s_.order.TeamUsage(job.team);
  rights.within_guarantee = s_.Entitled(job.team) + TotalOf(job.tasks).gpus <= team.guaranteed_gpus;
  auto lowest = s_.lowest_priority.find(job.team);
  rights.by_priority = s_.config.priority_preemption && lowest != s_.lowest_priority.end() &&
                       lowest->second < job.priority;
  // A job that may move others makes its search for victims to reclaim there (moving.h),
  // together with the jobs it may move, as one search.
  rights.by_reclaim = s_.config.quota_reclaim && rights.within_guarantee && s_.any_team_borrows &&
                      !MayMove(s_, job);
  rights.las = s_.config.policy == Policy::kLeastAttainedService;
  rights.level = levels_.RightsOf(job);
  return rights;
}

bool VictimSearch::TryPreemption(const PendingJob& job) {
  PreemptionRights rights = RightsOf(job);
  if (!rights.Any()) return false;
  // A search costs a walk over running jobs and a copy of the capacity; a pass makes only so
  // many. The rest wait for the next pass, which the victims' stopping triggers anyway. Jobs
  // within their team's guarantee have searches of their own: borrowers that look for victims
  // of a later level, and find none, must not use up the searches that keep the guarantee
  // (default policy).
  int& searches =
      rights.by_reclaim && s_.GuaranteesFirst() ? s_.guarantee_searches : s_.preemption_searches;
  if (searches >= kMaxPreemptionSearches) return false;
  ++searches;
  Candidates candidates = FindCandidates(job, rights);
  // Cheap test first: even all of them together would not free enough GPUs.
  if (candidates.jobs.empty() ||
      candidates.gpus + s_.unreserved.free_gpus() < TotalOf(job.tasks).gpus) {
    return false;
  }
  // Where the job will start once its victims have stopped.
  std::optional<std::vector<const RunningJob*>> victims;
  std::optional<std::vector<TaskPlacement>> placement;
  {
    ScopedWhatIf what_if(s_.unreserved);
    victims = ChooseVictims(s_.unreserved, job.tasks, job.constraints, candidates.jobs);
    if (victims) placement = s_.unreserved.Place(job.tasks, job.constraints);
  }
  if (!victims) return false;
  Preempt(job, rights, candidates.reclaimed, *victims, placement);
  return true;
}

VictimSearch::Candidates VictimSearch::FindCandidates(const PendingJob& job,
                                                      const PreemptionRights& rights) {
  Candidates out;
  Found found;               // a run per team
  std::vector<size_t> runs;  // where each begins
  for (PreemptibleTeam& team : PreemptibleTeams()) {
    size_t start = found.size();
    AddCandidatesOf(team, job, rights, found, out);
    if (found.size() > start) runs.push_back(start);
  }
  MergeRuns(found, runs);
  out.jobs.reserve(found.size());
  for (const auto& [key, r] : found) out.jobs.push_back(r);
  return out;
}

// The same test for every preemptible job, with what depends on its team alone worked out once
// per team: whether it is the job's own, and how many GPUs it may still lose to reclaim
// (Entitled less its guarantee, less what is already among the candidates: a team is reclaimed
// from only while it still borrows, so at most its last victim takes it below its guarantee).
// A team that can give nothing is not looked at.
// A job of another team (las: by level; srtf-oracle: by service left) is taken only while its
// team keeps its guarantee without it: one taken below would reclaim from the team that took
// it, which would take back, and so on (las: 7.6 preemptions per job on the ITP trace with 15
// teams before this rule; srtf-oracle never finished a replay).
void VictimSearch::AddCandidatesOf(PreemptibleTeam& team, const PendingJob& job,
                                   const PreemptionRights& rights, Found& found, Candidates& out) {
  bool same_team = team.name == job.team;
  bool reclaim = !same_team && s_.config.quota_reclaim && rights.within_guarantee;
  bool beyond_guarantee_only = !same_team && (rights.las || rights.level.by_service);
  int64_t room = reclaim || beyond_guarantee_only
                     ? s_.Entitled(team.name) - s_.order.TeamUsage(team.name).guaranteed_gpus
                     : 0;
  if (!(reclaim && room > 0) && !same_team && !rights.OtherTeamsByRight()) return;
  if (beyond_guarantee_only && !reclaim && room <= 0) return;
  // Jobs it could preempt but for their minimum run time: look again when the first of them
  // reaches it, if nothing else happens before.
  for (const RunningJob* r : team.young) {
    if ((reclaim && room > 0) ||
        ByOtherRight(job, rights, *r, LasQueue(s_.AttainedNow(*r), s_.config.las_thresholds),
                     same_team)) {
      s_.Recheck(r->started_at + s_.config.min_runtime_before_preemption);
    }
  }
  SortCheapestFirst(team);
  for (const Preemptible& p : team.jobs) {
    const RunningJob& r = *p.job;
    if (!s_.victims.empty() && s_.victims.count(r.job_id)) continue;
    if (reclaim && room > 0) {
      out.reclaimed.push_back(r.job_id);
      room -= p.gpus;
    } else if (!ByOtherRight(job, rights, r, p.queue, same_team)) {
      continue;
    } else if (beyond_guarantee_only) {
      if (p.gpus > room) continue;
      room -= p.gpus;
    }
    found.emplace_back(p.key, &r);
    out.gpus += p.gpus;
  }
}

bool VictimSearch::ByOtherRight(const PendingJob& job, const PreemptionRights& rights,
                                const RunningJob& r, int queue, bool same_team) const {
  bool lower = same_team && s_.config.priority_preemption && r.priority < job.priority;
  return lower || levels_.MayPreempt(rights.level, job, r, queue);
}

void VictimSearch::Preempt(const PendingJob& job, const PreemptionRights& rights,
                           const std::vector<JobId>& reclaimed,
                           const std::vector<const RunningJob*>& victims,
                           const std::optional<std::vector<TaskPlacement>>& placement) {
  std::vector<std::string> names;
  s_.reclaim_delta[job.team] += TotalOf(job.tasks).gpus;
  for (const RunningJob* v : victims) {
    s_.victims.insert(v->job_id);
    s_.reclaim_delta[v->team] -= v->Total().gpus;
    auto [cause, why] = CauseOf(job, rights, reclaimed, *v);
    s_.plan.preemptions.push_back(Preemption{v->job_id, job.job_id, std::move(why), cause});
    names.push_back(std::to_string(v->job_id));
  }
  if (placement) Claim(s_, job, *placement);
  s_.Wait(job, fmt::format("preempting job{} {} to make room; starts once they have stopped",
                           names.size() == 1 ? "" : "s", fmt::join(names, ", ")));
}

std::pair<PreemptionCause, std::string> VictimSearch::CauseOf(const PendingJob& job,
                                                              const PreemptionRights& rights,
                                                              const std::vector<JobId>& reclaimed,
                                                              const RunningJob& v) const {
  if (v.team == job.team && v.priority < job.priority && s_.config.priority_preemption) {
    return {PreemptionCause::kPriority,
            fmt::format("preempted by job {} of higher priority ({} > {})", job.job_id,
                        job.priority, v.priority)};
  }
  if (std::find(reclaimed.begin(), reclaimed.end(), v.job_id) != reclaimed.end()) {
    return {PreemptionCause::kQuotaReclaim, ReclaimReason(job, v)};
  }
  if (rights.level.by_service) {
    return {
        PreemptionCause::kOracle,
        fmt::format("preempted by job {}, which has less GPU time left (srtf-oracle)", job.job_id)};
  }
  return {PreemptionCause::kLevel,
          fmt::format("preempted by job {}, which has had less GPU time (least attained service)",
                      job.job_id)};
}

}  // namespace cohort::scheduler
