#include "model/job_spec.h"

#include <algorithm>

namespace cohort {

bool IsValidRole(std::string_view role) {
  auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  };
  return !role.empty() && role.size() <= kMaxRoleLength && role[0] >= 'a' && role[0] <= 'z' &&
         std::all_of(role.begin(), role.end(), allowed);
}

const char* FrameworkName(Framework f) {
  switch (f) {
    case Framework::kNone:
      return "none";
    case Framework::kPyTorch:
      return "pytorch";
    case Framework::kTensorFlow:
      return "tensorflow";
  }
  return "none";
}

std::optional<Framework> ParseFramework(std::string_view name) {
  for (Framework f : {Framework::kNone, Framework::kPyTorch, Framework::kTensorFlow}) {
    if (name == FrameworkName(f)) return f;
  }
  return std::nullopt;
}

std::string PriorityName(int priority) {
  switch (priority) {
    case kPriorityLow:
      return "low";
    case kPriorityNormal:
      return "normal";
    case kPriorityHigh:
      return "high";
    default:
      return std::to_string(priority);
  }
}

int JobSpec::TotalReplicas() const {
  int n = 0;
  for (const auto& g : tasks) n += g.replicas;
  return n;
}

bool JobSpec::elastic() const {
  for (const auto& g : tasks) {
    if (g.elastic()) return true;
  }
  return false;
}

Resources JobSpec::TotalResources() const {
  Resources total;
  for (const auto& g : tasks) total += g.resources * g.replicas;
  return total;
}

}  // namespace cohort
