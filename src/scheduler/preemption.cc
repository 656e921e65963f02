#include "scheduler/preemption.h"

#include <algorithm>
#include <tuple>

namespace cohort::scheduler {

PreemptionKey PreemptionCost(const RunningJob& job, bool rotate, bool first) {
  // Work since the later of its start and its last checkpoint is lost: the later that is, the
  // less, so it comes first.
  Timestamp safe = job.started_at;
  if (job.last_checkpoint_at) safe = std::max(safe, *job.last_checkpoint_at);
  return PreemptionKey{first ? 0 : 1,   job.priority,     rotate ? job.preemptions : 0,
                       -ToMicros(safe), job.Total().gpus, -job.job_id};
}

void SortByPreemptionCost(std::vector<const RunningJob*>& candidates, bool rotate) {
  // Keys are computed once: a pass may sort tens of thousands of candidates, and Total() walks
  // a job's tasks.
  std::vector<std::pair<PreemptionKey, const RunningJob*>> keyed;
  keyed.reserve(candidates.size());
  for (const RunningJob* c : candidates) keyed.emplace_back(PreemptionCost(*c, rotate), c);
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < keyed.size(); ++i) candidates[i] = keyed[i].second;
}

std::optional<std::vector<const RunningJob*>> ChooseVictims(
    CapacityIndex& what_if, const std::vector<TaskRequest>& tasks, const Constraints& constraints,
    const std::vector<const RunningJob*>& candidates) {
  // Cheap test first: if the job could not fit by its GPUs even with every candidate gone, it
  // cannot fit with some of them gone either, and nobody is given back.
  std::vector<int64_t> could_free(what_if.nodes().size());
  for (size_t n = 0; n < could_free.size(); ++n) could_free[n] = what_if.nodes()[n].free.gpus;
  for (const RunningJob* c : candidates) {
    for (const auto& p : c->placement) {
      int n = what_if.Find(p.node_id);
      if (n >= 0) could_free[static_cast<size_t>(n)] += static_cast<int64_t>(p.gpus.size());
    }
  }
  int64_t total = 0;
  int64_t largest = 0;
  for (int64_t g : could_free) {
    total += g;
    largest = std::max(largest, g);
  }
  auto nodes_with = [&](int64_t gpus) {
    return static_cast<size_t>(
        std::count_if(could_free.begin(), could_free.end(), [&](int64_t g) { return g >= gpus; }));
  };
  if (!GpusMightFit(tasks, total, largest, nodes_with)) return std::nullopt;
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
