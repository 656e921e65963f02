#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "agent/task_supervisor.h"
#include "cohortd/commands.h"

namespace cohort::cohortd {

std::string DefaultDataDir(const std::string& what) {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/cohort/" + what;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.local/share/cohort/" + what;
}

bool SetUpLogging(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") return false;
  auto logger = spdlog::stderr_color_mt("cohortd");
  spdlog::set_default_logger(logger);
  spdlog::set_level(parsed);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::flush_on(spdlog::level::info);
  return true;
}

int RunTask(const std::string& task_dir) { return agent::RunTaskSupervisor(task_dir); }

}  // namespace cohort::cohortd
