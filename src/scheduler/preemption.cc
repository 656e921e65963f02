#include "scheduler/preemption.h"

#include <algorithm>
#include <tuple>

namespace cohort::scheduler {

void SortByPreemptionCost(std::vector<const RunningJob*>& candidates, bool rotate) {
  // Work since the later of its start and its last checkpoint is lost: the later that is, the
  // less, so it comes first. Keys are computed once: a pass may sort tens of thousands of
  // candidates, and Total() walks a job's tasks.
  using Key = std::tuple<int, int, int64_t, int64_t, JobId>;
  std::vector<std::pair<Key, const RunningJob*>> keyed;
  keyed.reserve(candidates.size());
  for (const RunningJob* c : candidates) {
    Timestamp safe = c->started_at;
    if (c->last_checkpoint_at) safe = std::max(safe, *c->last_checkpoint_at);
    keyed.emplace_back(
        Key{c->priority, rotate ? c->preemptions : 0, -ToMicros(safe), c->Total().gpus, -c->job_id},
        c);
  }
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < keyed.size(); ++i) candidates[i] = keyed[i].second;
}

std::optional<std::vector<const RunningJob*>> ChooseVictims(
    CapacityIndex& what_if, const std::vector<TaskRequest>& tasks, const Constraints& constraints,
    const std::vector<const RunningJob*>& candidates) {
  std::vector<const RunningJob*> victims;
  bool fits = false;
  for (const RunningJob* c : candidates) {
    what_if.Give(c->tasks, c->placement);
    victims.push_back(c);
    if (what_if.Place(tasks, constraints)) {
      fits = true;
      break;
    }
  }
  if (!fits) return std::nullopt;
  // Keep only the victims the job needs: try it without each, most expensive first.
  for (size_t i = victims.size(); i-- > 0;) {
    what_if.Take(victims[i]->tasks, victims[i]->placement);
    if (what_if.Place(tasks, constraints)) {
      victims.erase(victims.begin() + static_cast<ptrdiff_t>(i));
    } else {
      what_if.Give(victims[i]->tasks, victims[i]->placement);
    }
  }
  return victims;
}

}  // namespace cohort::scheduler
