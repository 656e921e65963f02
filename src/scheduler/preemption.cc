#include "scheduler/preemption.h"

#include <algorithm>
#include <tuple>

namespace cohort::scheduler {

void SortByPreemptionCost(std::vector<const RunningJob*>& candidates) {
  std::sort(candidates.begin(), candidates.end(), [](const RunningJob* a, const RunningJob* b) {
    // Later start = less work lost; so "started_at descending" comes first.
    int64_t ga = a->Total().gpus;
    int64_t gb = b->Total().gpus;
    return std::make_tuple(a->priority, -ToMicros(a->started_at), ga, -a->job_id) <
           std::make_tuple(b->priority, -ToMicros(b->started_at), gb, -b->job_id);
  });
}

std::optional<std::vector<const RunningJob*>> ChooseVictims(
    const CapacityIndex& free, const std::vector<TaskRequest>& tasks,
    const Constraints& constraints, const std::vector<const RunningJob*>& candidates) {
  CapacityIndex what_if = free;
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
