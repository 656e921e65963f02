#include "master/session_policy.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/units.h"

namespace cohort::master {

Status ApplySessionPolicy(const SessionPolicy& policy, JobSpec& spec) {
  if (!spec.session) return Status::Ok();
  if (spec.session->idle_timeout && *spec.session->idle_timeout > policy.max_idle_timeout) {
    return Status::InvalidArgument(
        "job spec has 1 error",
        {fmt::format("session.idle_timeout: {} is longer than this cluster's longest, {} "
                     "(cohortd master --max-idle-timeout)",
                     FormatDuration(*spec.session->idle_timeout),
                     FormatDuration(policy.max_idle_timeout))});
  }
  spec.priority = policy.priority;
  return Status::Ok();
}

Duration IdleTimeoutOf(const SessionPolicy& policy, const JobSpec& spec) {
  Duration asked = spec.session && spec.session->idle_timeout ? *spec.session->idle_timeout
                                                              : policy.max_idle_timeout;
  return std::min(asked, policy.max_idle_timeout);
}

Duration WarningOf(const SessionPolicy& policy, const JobSpec& spec) {
  return std::min(policy.warning, IdleTimeoutOf(policy, spec) / 2);
}

}  // namespace cohort::master
