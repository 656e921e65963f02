// Victim searches and preemption, for a waiting job that does not fit (docs/scheduler.md,
// "Preemption"): it waits for jobs already stopping if they are enough; otherwise it preempts if
// it has a right to: higher priority within its team, quota reclaim from teams that borrow
// beyond their guarantee, an earlier level (levels.h), or less GPU time left (srtf-oracle).
// Which of the candidates go is ChooseVictims' answer (preemption.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/plan.h"
#include "scheduler/levels.h"
#include "scheduler/pass_state.h"
#include "scheduler/preemption.h"

namespace cohort::scheduler {

// A running job that may be preempted, with what victim searches ask of it.
struct Preemptible {
  PreemptionKey key;  // cheapest first
  const RunningJob* job = nullptr;
  int64_t gpus = 0;
  int queue = 0;  // its least-attained-service queue now
};

// A team's preemptible jobs, sorted cheapest first when a search first needs their order,
// and its jobs short of the minimum run time.
struct PreemptibleTeam {
  std::string name;
  std::vector<Preemptible> jobs;
  bool sorted = false;
  std::vector<const RunningJob*> young;
};
// Sorts the team's jobs cheapest first, once.
void SortCheapestFirst(PreemptibleTeam& team);

// The one place of the rule "sweep trials beyond their team's guarantee are the first jobs
// reclaimed" (docs/scheduler.md, "Preemption"): of a team that holds `borrowed` GPUs beyond its
// guarantee (> 0), its preemptible trials, cheapest first, are counted as what it borrows until
// they cover it; their keys put them before every other job, whatever the right that takes them
// (quota reclaim, priority, level). A trial the guarantee covers keeps its place. `rotate`:
// PreemptionCost's.
void PutTrialsBeyondGuaranteeFirst(PreemptibleTeam& team, int64_t borrowed, bool rotate);

// The reason given to a job preempted for quota reclaim.
std::string ReclaimReason(const PendingJob& job, const RunningJob& victim);

// Why a waiting job may preempt, worked out once per search.
struct PreemptionRights {
  bool within_guarantee = false;  // of its team, with the job
  bool by_priority = false;       // its team runs jobs of lower priority
  bool by_reclaim = false;        // within its guarantee, while some team borrows
  LevelRights level;
  bool las = false;  // policy las: jobs of other teams are taken by level too
  bool Any() const { return by_priority || by_reclaim || level.by_level || level.by_service; }
  // Jobs of other teams are taken by another right than reclaim only under las (a level) and
  // srtf-oracle.
  bool OtherTeamsByRight() const { return (las && level.by_level) || level.by_service; }
};

class VictimSearch {
 public:
  VictimSearch(PassState& state, Levels& levels) : s_(state), levels_(levels) {}

  // Running jobs that may be preempted at all (not stopping, past their minimum run time), by
  // team, built on first need. A search looks only at the teams it may take from, each in its
  // own order, and merges what it finds.
  std::vector<PreemptibleTeam>& PreemptibleTeams();

  // Jobs (and elastic replicas) already on their way out may be enough for `job`: then it waits
  // for them, and nothing more is preempted or taken back for it.
  bool WaitForStopping(const PendingJob& job);

  // Preempts for `job` if it is entitled to: returns true if the job is dealt with (victims
  // chosen, or waiting for earlier victims to stop).
  bool TryPreemption(const PendingJob& job);

  PreemptionRights RightsOf(const PendingJob& job);

  // Whom `job` may preempt by `rights`, cheapest first over all teams.
  struct Candidates {
    std::vector<const RunningJob*> jobs;
    std::vector<JobId> reclaimed;  // those of `jobs` taken back from a team that borrows
    int64_t gpus = 0;              // in all
  };
  Candidates FindCandidates(const PendingJob& job, const PreemptionRights& rights);

 private:
  using Found = std::vector<std::pair<PreemptionKey, const RunningJob*>>;
  // Adds what `job` may take from `team` to `found` (and to out.reclaimed and out.gpus).
  void AddCandidatesOf(PreemptibleTeam& team, const PendingJob& job, const PreemptionRights& rights,
                       Found& found, Candidates& out);
  // Whether `r` (in least-attained-service queue `queue` now) may be preempted for `job` by a
  // right other than reclaim.
  bool ByOtherRight(const PendingJob& job, const PreemptionRights& rights, const RunningJob& r,
                    int queue, bool same_team) const;
  // Preempts `victims` for `job`, which claims `placement` (if any) and waits for them.
  void Preempt(const PendingJob& job, const PreemptionRights& rights,
               const std::vector<JobId>& reclaimed, const std::vector<const RunningJob*>& victims,
               const std::optional<std::vector<TaskPlacement>>& placement);
  std::pair<PreemptionCause, std::string> CauseOf(const PendingJob& job,
                                                  const PreemptionRights& rights,
                                                  const std::vector<JobId>& reclaimed,
                                                  const RunningJob& victim) const;

  PassState& s_;
  Levels& levels_;
  std::optional<std::vector<PreemptibleTeam>> preemptible_;  // see PreemptibleTeams()
};

}  // namespace cohort::scheduler
