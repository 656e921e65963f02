// What the cluster's admin decides for interactive sessions (docs/runtimes.md, "Idle sessions"):
// the longest and default idle timeout, how long before the end a session is warned, and the
// priority sessions run at, which counts against their team's quota like any job's.
#pragma once

#include "common/status.h"
#include "common/time.h"
#include "model/job_spec.h"

namespace cohort::master {

struct SessionPolicy {
  // A session's idle timeout when its spec names none, and the longest one may name
  // (`cohortd master --max-idle-timeout`).
  Duration max_idle_timeout = std::chrono::minutes(30);
  // How long before its end a session is warned, whether it is ending for idleness or being
  // preempted (`--session-warning`); never more than half its idle timeout.
  Duration warning = std::chrono::minutes(5);
  // The priority every session runs at (`--interactive-priority`), whatever its spec says.
  int priority = kPriorityNormal;
  // A GPU busier than this (0..1) in a sample counts as used.
  double busy_above = 0.01;
};

// At submission: a session's idle timeout within the cluster's maximum (kInvalidArgument naming
// the field and the flag otherwise), and its priority the cluster's. Other jobs pass unchanged.
Status ApplySessionPolicy(const SessionPolicy& policy, JobSpec& spec);

// The idle timeout of a session of `spec` under `policy`.
Duration IdleTimeoutOf(const SessionPolicy& policy, const JobSpec& spec);
// How long before the end of a session of `spec` it is warned.
Duration WarningOf(const SessionPolicy& policy, const JobSpec& spec);

}  // namespace cohort::master
