// The environment a task starts with (docs/job-spec.md, "The task's environment"): a documented
// base, then what the master sends (Cohort's and the framework's variables, the spec's `env`,
// the job's secrets), which may override any of the base. Never the agent's own environment:
// what the agent was started with (a cloud key, a debugging LD_PRELOAD) is not the task's.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace cohort::agent {

// The PATH of a task whose spec sets none.
inline constexpr const char* kTaskDefaultPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
inline constexpr const char* kTaskDefaultLang = "C.UTF-8";
inline constexpr const char* kTaskDefaultShell = "/bin/sh";

struct TaskEnvironmentInputs {
  // The account the task runs as.
  std::string user;
  std::string home;
  std::string shell;  // empty: kTaskDefaultShell
  // The agent's TZ, passed on so that a task's local time is the node's; empty: unset.
  std::string tz;
  // The master's variables for the task (TaskLaunch::env), applied last.
  std::map<std::string, std::string> injected;
};

// The whole environment of the task.
std::map<std::string, std::string> TaskEnvironment(const TaskEnvironmentInputs& in);
// As execve wants it: "NAME=value", in the map's order.
std::vector<std::string> EnvironmentStrings(const std::map<std::string, std::string>& env);

}  // namespace cohort::agent
