#include "agent/base_environment.h"

namespace cohort::agent {

std::map<std::string, std::string> TaskEnvironment(const TaskEnvironmentInputs& in) {
  std::map<std::string, std::string> env = {
      {"PATH", kTaskDefaultPath},
      {"HOME", in.home},
      {"USER", in.user},
      {"LOGNAME", in.user},
      {"SHELL", in.shell.empty() ? kTaskDefaultShell : in.shell},
      {"LANG", kTaskDefaultLang},
  };
  if (!in.tz.empty()) env["TZ"] = in.tz;
  for (const auto& [k, v] : in.injected) env[k] = v;
  return env;
}

std::vector<std::string> EnvironmentStrings(const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace cohort::agent
