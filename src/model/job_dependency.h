// Dependencies between jobs (docs/job-spec.md, "Dependencies"): a job waits until each job it
// depends on has ended the way it says, as Slurm's --dependency=afterok|afternotok|afterany.
#pragma once

#include <array>
#include <cstddef>
#include <optional>

#include "common/enum_names.h"
#include "model/job_id.h"

namespace cohort {

enum class DependencyCondition { kSuccess, kFailure, kEnd };
inline constexpr auto kDependencyConditionNames = std::to_array<EnumName<DependencyCondition>>({
    {DependencyCondition::kSuccess, "success"},
    {DependencyCondition::kFailure, "failure"},
    {DependencyCondition::kEnd, "end"},
});
inline const char* DependencyConditionName(DependencyCondition c) {
  return NameOf(kDependencyConditionNames, c);
}

struct Dependency {
  JobId job = 0;
  DependencyCondition on = DependencyCondition::kSuccess;
  bool operator==(const Dependency&) const = default;
};

// The most jobs one job depends on.
inline constexpr size_t kMaxJobDependencies = 64;

// Whether a job that ended SUCCEEDED (`succeeded`) or otherwise meets `on`.
inline bool DependencyMet(DependencyCondition on, bool succeeded) {
  return on == DependencyCondition::kEnd || succeeded == (on == DependencyCondition::kSuccess);
}

}  // namespace cohort
