// Choosing what to preempt so that a waiting job fits: the fewest, cheapest victims, and only
// victims whose resources the job actually needs.
#pragma once

#include <optional>
#include <tuple>
#include <vector>

#include "model/plan.h"
#include "scheduler/capacity_index.h"

namespace cohort::scheduler {

// Cheapest first: sweep trials beyond their team's guarantee (`first`: TrialsBeyondGuarantee,
// victims.h), then lowest priority, then (with `rotate`) fewest earlier preemptions, so that the
// burden rotates instead of falling on whichever job restarted last, then least progress lost
// (started or checkpointed most recently), then fewest GPUs, then newest job.
void SortByPreemptionCost(std::vector<const RunningJob*>& candidates, bool rotate = true);
// The key of that order (smaller is cheaper; no two jobs share one).
using PreemptionKey = std::tuple<int, int, int, int64_t, int64_t, JobId>;
PreemptionKey PreemptionCost(const RunningJob& job, bool rotate, bool first = false);

// Victims among `candidates` (sorted cheapest first) whose resources, added to `what_if`, let
// `tasks` fit. Greedy: add the cheapest until the job fits, then drop every victim it fits
// without, most expensive first. Nothing if even all candidates together do not make room.
// Works on `what_if` in place (under a mark: CapacityIndex::Mark): it is left with the chosen
// victims' resources given back; when there are none, it is to be rolled back.
std::optional<std::vector<const RunningJob*>> ChooseVictims(
    CapacityIndex& what_if, const std::vector<TaskRequest>& tasks, const Constraints& constraints,
    const std::vector<const RunningJob*>& candidates);

}  // namespace cohort::scheduler
