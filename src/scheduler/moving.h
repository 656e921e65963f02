// Moving jobs (docs/scheduler.md, "Moving jobs"), default policy: a job within its team's
// guarantee that no node has room for, although the cluster's free GPUs (and what borrowers
// hold) would do, moves smaller jobs out of the way: they stop and restart where GPUs are free.
// Without it such a job waits for nodes to drain, for hours in a busy cluster of small jobs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/plan.h"
#include "scheduler/pass_state.h"
#include "scheduler/victims.h"

namespace cohort::scheduler {

// Whether `job` (the job being considered) may move others: then its search for victims to
// reclaim is made there, together with the jobs it may move, as one search.
bool MayMove(const PassState& s, const PendingJob& job);

// What a job that may move others may preempt, cheapest first: what borrowers hold beyond
// their guarantee (reclaim, as in VictimSearch::TryPreemption), then jobs smaller than it of
// teams that do not borrow, which restart elsewhere without costing their team its GPUs.
struct MoveCandidates {
  std::vector<const RunningJob*> jobs;
  std::vector<JobId> reclaimed;  // those of `jobs` taken back from borrowers
  int64_t reclaimed_gpus = 0;
  bool Reclaimed(const RunningJob* r) const {
    return std::find(reclaimed.begin(), reclaimed.end(), r->job_id) != reclaimed.end();
  }
};

class Moving {
 public:
  Moving(PassState& state, VictimSearch& victims) : s_(state), victims_(victims) {}

  // Moves jobs out of the way of `job` if it may: returns true if the job is dealt with (it
  // waits for the moved jobs to stop, holding where it will start).
  bool TryMoving(const PendingJob& job);

  // The candidates for `job`, which needs `gpus` GPUs.
  MoveCandidates FindMoveCandidates(const PendingJob& job, int64_t gpus);

  // In a what-if of s.free (victims given back, `job` placed): whether every moved job among
  // `victims` has room elsewhere. Free GPUs count even where other teams' reservations hold
  // them (a move serves a guarantee now, a reservation later), but not what is held for the
  // job's own team: its order stands, as in Pass::PlaceNow. Where no room is, more borrowers
  // among `candidates` give theirs back, and join `victims`.
  bool RoomElsewhere(const PendingJob& job, const std::vector<TaskPlacement>& placement,
                     const MoveCandidates& candidates, std::vector<const RunningJob*>& victims);

 private:
  // By node: the GPUs it keeps once every borrower's job that `job` may reclaim is gone.
  using Kept = std::unordered_map<std::string_view, int64_t>;
  // moved?, keeps part of a node?, cost, job
  using Found = std::vector<std::tuple<bool, bool, PreemptionKey, const RunningJob*>>;

  Kept KeptByNode(const PendingJob& job, const std::vector<PreemptibleTeam>& teams) const;
  // What `team` holds beyond its guarantee (> 0: it borrows), and of that what `job` may
  // reclaim.
  std::pair<int64_t, int64_t> RoomOf(const PreemptibleTeam& team, const PendingJob& job) const;
  // Adds what `job` (of `gpus` GPUs) may take from `team` to `found` and `out`, given the GPUs
  // each node keeps (`kept`, see FindMoveCandidates).
  void AddCandidatesOf(PreemptibleTeam& team, const PendingJob& job, int64_t gpus, const Kept& kept,
                       Found& found, MoveCandidates& out);
  // Preempts `victims` for `job`, which claims `placement` and waits for them.
  void Move(const PendingJob& job, const MoveCandidates& candidates,
            const std::vector<const RunningJob*>& victims,
            const std::vector<TaskPlacement>& placement);

  PassState& s_;
  VictimSearch& victims_;
};

}  // namespace cohort::scheduler
