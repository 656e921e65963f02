// Placement of one job onto free capacity: the part of the scheduler that chooses nodes and
// GPUs. Pure; used by the gang scheduler and its tests.
#pragma once

#include <optional>
#include <vector>

#include "model/plan.h"

namespace cohort::scheduler {

// Finds nodes and GPUs for every task of `tasks` within `free`, using as few nodes as possible
// and, among those, the nodes the job fills most tightly. Returns nothing if the whole set does
// not fit. Does not modify `free`.
std::optional<std::vector<TaskPlacement>> PlaceGang(const std::vector<NodeCapacity>& free,
                                                    const std::vector<TaskRequest>& tasks);

// Removes the placed tasks' resources and GPUs from `free`.
void Reserve(std::vector<NodeCapacity>& free, const std::vector<TaskRequest>& tasks,
             const std::vector<TaskPlacement>& placement);

}  // namespace cohort::scheduler
