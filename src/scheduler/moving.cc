#include "scheduler/moving.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>

#include "scheduler/preemption.h"
#include "scheduler/reservations.h"

namespace cohort::scheduler {
namespace {

// A node the snapshot lacks (not ready) is not one a gang could be placed on: it counts as
// kept.
template <typename Kept>
bool KeepsPart(const Kept& kept, const RunningJob& r) {
  return std::any_of(r.placement.begin(), r.placement.end(), [&](const TaskPlacement& p) {
    auto it = kept.find(p.node_id);
    return it == kept.end() || it->second > 0;
  });
}

}  // namespace

bool MayMove(const PassState& s, const PendingJob& job) {
  return s.GuaranteesFirst() && s.within_guarantee && s.config.move_after &&
         TotalOf(job.tasks).gpus >= 2 &&
         s.in.now >= PassState::WaitingSince(job) + *s.config.move_after;
}

bool Moving::TryMoving(const PendingJob& job) {
  if (!MayMove(s_, job)) {
    if (s_.GuaranteesFirst() && s_.within_guarantee && s_.config.move_after) {
      s_.Recheck(PassState::WaitingSince(job) + *s_.config.move_after);
    }
    return false;
  }
  // Finding the candidates walks the running jobs: it counts as a search even when it finds
  // too few (otherwise every waiting job within a guarantee walked them, every pass).
  if (s_.guarantee_searches >= kMaxPreemptionSearches) return false;
  ++s_.guarantee_searches;
  Resources need = TotalOf(job.tasks);
  MoveCandidates candidates = FindMoveCandidates(job, need.gpus);
  if (candidates.jobs.empty() ||
      s_.guaranteed.free_gpus() + candidates.reclaimed_gpus < need.gpus) {
    return false;
  }
  std::optional<std::vector<const RunningJob*>> victims;
  std::optional<std::vector<TaskPlacement>> placement;
  {
    ScopedWhatIf what_if(s_.guaranteed);
    TakeOwnHolds(s_, job);  // as Pass::PlaceNow: the team's own order stands
    victims = ChooseVictims(s_.guaranteed, job.tasks, job.constraints, candidates.jobs);
    // No victims: the job fits but for its own team's reservations, which keep it out.
    if (victims && !victims->empty()) placement = s_.guaranteed.Place(job.tasks, job.constraints);
    if (placement && !RoomElsewhere(job, *placement, candidates, *victims)) placement.reset();
  }
  if (!placement) return false;
  Move(job, candidates, *victims, *placement);
  return true;
}

std::pair<int64_t, int64_t> Moving::RoomOf(const PreemptibleTeam& team,
                                           const PendingJob& job) const {
  int64_t beyond = s_.Entitled(team.name) - s_.order.TeamUsage(team.name).guaranteed_gpus;
  return std::pair{beyond, team.name != job.team && s_.config.quota_reclaim ? beyond : 0};
}

// Borrowers' jobs that leave their nodes empty when taken back go first: moved jobs as big as a
// node have nowhere to go in a full cluster, so a gang of whole nodes gets them from reclaim or
// not at all (docs/scheduler.md, "Moving jobs"). What each node keeps: what jobs that may not be
// taken back hold there (other teams', young ones, stopping ones).
Moving::Kept Moving::KeptByNode(const PendingJob& job,
                                const std::vector<PreemptibleTeam>& teams) const {
  Kept kept;
  for (const auto& n : s_.in.cluster.nodes) kept[n.node_id] = n.total.gpus - n.free.gpus;
  for (const PreemptibleTeam& team : teams) {
    if (RoomOf(team, job).second <= 0) continue;
    for (const Preemptible& p : team.jobs) {
      for (size_t t = 0; t < p.job->placement.size(); ++t) {
        kept[p.job->placement[t].node_id] -= p.job->tasks[t].resources.gpus;
      }
    }
  }
  return kept;
}

MoveCandidates Moving::FindMoveCandidates(const PendingJob& job, int64_t gpus) {
  Found found;
  MoveCandidates out;
  std::vector<PreemptibleTeam>& teams = victims_.PreemptibleTeams();
  Kept kept = KeptByNode(job, teams);
  for (PreemptibleTeam& team : teams) AddCandidatesOf(team, job, gpus, kept, found, out);
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a), std::get<2>(a)) <
           std::tie(std::get<0>(b), std::get<1>(b), std::get<2>(b));
  });
  out.jobs.reserve(found.size());
  for (const auto& f : found) out.jobs.push_back(std::get<3>(f));
  return out;
}

void Moving::AddCandidatesOf(PreemptibleTeam& team, const PendingJob& job, int64_t gpus,
                             const Kept& kept, Found& found, MoveCandidates& out) {
  auto [beyond, room] = RoomOf(team, job);  // beyond > 0: the team borrows
  if (room <= 0 && beyond > 0) return;
  for (const RunningJob* r : team.young) {
    if (room > 0 || r->Total().gpus < gpus) {
      s_.Recheck(r->started_at + s_.config.min_runtime_before_preemption);
    }
  }
  SortCheapestFirst(team);
  std::vector<const Preemptible*> in_order;
  in_order.reserve(team.jobs.size());
  for (const Preemptible& p : team.jobs) in_order.push_back(&p);
  if (room > 0) {
    std::stable_partition(in_order.begin(), in_order.end(),
                          [&](const Preemptible* p) { return !KeepsPart(kept, *p->job); });
  }
  for (const Preemptible* p : in_order) {
    if (!s_.victims.empty() && s_.victims.count(p->job->job_id)) continue;
    if (room > 0) {
      out.reclaimed.push_back(p->job->job_id);
      out.reclaimed_gpus += p->gpus;
      room -= p->gpus;
      found.emplace_back(false, KeepsPart(kept, *p->job), p->key, p->job);
    } else if (beyond <= 0 && p->gpus < gpus) {
      found.emplace_back(true, false, p->key, p->job);
    }
  }
}

bool Moving::RoomElsewhere(const PendingJob& job, const std::vector<TaskPlacement>& placement,
                           const MoveCandidates& candidates,
                           std::vector<const RunningJob*>& victims) {
  ScopedWhatIf what_if(s_.free);
  for (const RunningJob* v : victims) s_.free.Give(v->tasks, v->placement);
  s_.free.Take(job.tasks, placement, /*partial=*/true);
  for (const auto* holds : {&s_.guarantee_holds, &s_.borrowing_holds}) {
    for (const TeamHold& h : *holds) {
      if (h.team == job.team) s_.free.Take(*h.tasks, h.placement, /*partial=*/true);
    }
  }
  std::vector<const RunningJob*> spare;  // borrowers not yet among the victims
  for (const RunningJob* c : candidates.jobs) {
    if (candidates.Reclaimed(c) && std::find(victims.begin(), victims.end(), c) == victims.end())
      spare.push_back(c);
  }
  std::vector<const RunningJob*> moved;
  for (const RunningJob* v : victims) {
    if (!candidates.Reclaimed(v)) moved.push_back(v);
  }
  for (const RunningJob* v : moved) {
    auto room = s_.free.Place(v->tasks, v->constraints);
    if (!room) {
      auto more = ChooseVictims(s_.free, v->tasks, v->constraints, spare);
      if (!more) return false;
      room = s_.free.Place(v->tasks, v->constraints);
      if (!room) return false;
      for (const RunningJob* m : *more) {
        victims.push_back(m);
        std::erase(spare, m);
      }
    }
    s_.free.Take(v->tasks, *room);
  }
  return true;
}

void Moving::Move(const PendingJob& job, const MoveCandidates& candidates,
                  const std::vector<const RunningJob*>& victims,
                  const std::vector<TaskPlacement>& placement) {
  Resources need = TotalOf(job.tasks);
  std::vector<std::string> names;
  s_.reclaim_delta[job.team] += need.gpus;
  for (const RunningJob* v : victims) {
    s_.victims.insert(v->job_id);
    if (candidates.Reclaimed(v)) {
      s_.reclaim_delta[v->team] -= v->Total().gpus;
      s_.plan.preemptions.push_back(Preemption{v->job_id, job.job_id, ReclaimReason(job, *v),
                                               PreemptionCause::kQuotaReclaim});
    } else {
      s_.plan.preemptions.push_back(Preemption{
          v->job_id, job.job_id,
          fmt::format("moved for job {} of team {}, within its guarantee, which needs {} "
                      "where the free ones are scattered; there is room for it elsewhere",
                      job.job_id, job.team, Gpus(need.gpus)),
          PreemptionCause::kMove});
    }
    names.push_back(std::to_string(v->job_id));
  }
  Claim(s_, job, placement);
  s_.Wait(job, fmt::format("moving job{} {} to make room; starts once they have stopped",
                           names.size() == 1 ? "" : "s", fmt::join(names, ", ")));
}

}  // namespace cohort::scheduler
