#include "model/job_spec.h"

#include "model/node.h"

#include <algorithm>

namespace cohort {

bool IsValidRole(std::string_view role) {
  auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  };
  return !role.empty() && role.size() <= kMaxRoleLength && role[0] >= 'a' && role[0] <= 'z' &&
         std::all_of(role.begin(), role.end(), allowed);
}

const char* FrameworkName(Framework f) { return NameOf(kFrameworkNames, f, "none"); }

std::optional<Framework> ParseFramework(std::string_view name) {
  return Parse(kFrameworkNames, name);
}

const char* RestartCauseName(RestartCause c) { return NameOf(kRestartCauseNames, c, "failure"); }

std::optional<RestartCause> ParseRestartCause(std::string_view name) {
  return Parse(kRestartCauseNames, name);
}

bool Constraints::Admits(const std::string& node_id, const std::string& node_gpu_model,
                         const std::map<std::string, std::string>& node_labels) const {
  if (!gpu_model.empty() && node_gpu_model != gpu_model) return false;
  for (const auto& [key, value] : labels) {
    auto it = node_labels.find(key);
    if (it == node_labels.end() || it->second != value) return false;
  }
  return excluded_nodes.count(node_id) == 0;
}

bool RestartPolicy::RestartsOn(RestartCause cause) const {
  return std::find(on.begin(), on.end(), cause) != on.end();
}

Duration RestartPolicy::BackoffAfter(int failures) const {
  Duration wait = backoff;
  for (int i = 1; i < failures && wait < max_backoff; ++i) wait *= 2;
  return std::min(wait, max_backoff);
}

EarlyEnd RestartPolicy::EndEarly(RestartCause cause, int failures) const {
  EarlyEnd end;
  end.failures = failures;
  end.restartable = RestartsOn(cause);
  if (!end.restartable) return end;
  end.failures = failures + 1;
  end.requeue = end.failures < max_attempts;
  // A node loss is not the job's doing: its next attempt may start at once.
  if (end.requeue && cause == RestartCause::kFailure) end.backoff = BackoffAfter(end.failures);
  return end;
}

std::string PriorityName(int priority) {
  const char* name = NameOf(kPriorityNames, priority, nullptr);
  return name ? name : std::to_string(priority);
}

std::optional<int> ParsePriorityName(std::string_view name) { return Parse(kPriorityNames, name); }

int JobSpec::TotalReplicas() const {
  int n = 0;
  for (const auto& g : tasks) n += g.replicas;
  return n;
}

bool JobSpec::UsesImages() const {
  return std::any_of(tasks.begin(), tasks.end(), [](const auto& g) { return !g.image.empty(); });
}

Constraints PlacementConstraints(const JobSpec& spec) {
  Constraints where = spec.constraints;
  if (spec.UsesImages()) where.labels[std::string(kRuntimeLabel)] = std::string(kPodmanRuntime);
  return where;
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
