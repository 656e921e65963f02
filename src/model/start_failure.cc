#include "model/start_failure.h"

namespace cohort {

const char* StartFailureName(StartFailure f) { return NameOf(kStartFailureNames, f, "program"); }

std::optional<StartFailure> ParseStartFailure(std::string_view name) {
  return Parse(kStartFailureNames, name);
}

StartFailureScope ScopeOf(StartFailure f) {
  switch (f) {
    case StartFailure::kAccount:
      // Accounts are per node: the account may exist on another.
      return StartFailureScope::kNode;
    case StartFailure::kProgram:
    case StartFailure::kWorkdir:
    case StartFailure::kImage:  // every node pulls from the same registry
      break;
  }
  return StartFailureScope::kEverywhere;
}

}  // namespace cohort
