// Why a task could not start, where no retry of it can succeed (docs/reliability.md, "Tasks
// that cannot start"). The agent names the kind in its report; the master ends the job at once
// for a cause that holds everywhere, and places it elsewhere for one that holds on that node
// only, without spending the restart budget on either. A new cause (a dataset or an image that
// does not exist) is one more name and its scope: no new plumbing.
#pragma once

#include <optional>
#include <string_view>

#include "common/enum_names.h"

namespace cohort {

enum class StartFailure {
  kProgram,  // the command's program is not found, or is not executable
  kWorkdir,  // the task's workdir does not exist
  kAccount,  // the job's user has no Unix account on the node
  kImage,    // the task's image does not exist in its registry
};
inline constexpr auto kStartFailureNames = std::to_array<EnumName<StartFailure>>({
    {StartFailure::kProgram, "program"},
    {StartFailure::kWorkdir, "workdir"},
    {StartFailure::kAccount, "account"},
    {StartFailure::kImage, "image"},
});
const char* StartFailureName(StartFailure f);
// None for a name this build does not know (a newer agent's): the master then treats the end as
// an ordinary failure, which is retried within the budget.
std::optional<StartFailure> ParseStartFailure(std::string_view name);

// Where a start failure holds.
enum class StartFailureScope {
  kEverywhere,  // the job fails at once
  kNode,        // the node is excluded for the job, which is placed elsewhere
};
StartFailureScope ScopeOf(StartFailure f);

}  // namespace cohort
