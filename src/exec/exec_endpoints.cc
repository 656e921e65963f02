#include "exec/exec_endpoints.h"

#include <fmt/format.h>

#include <charconv>
#include <vector>

#include "common/strings.h"

namespace cohort::exec {

StatusOr<Endpoint> FindEndpoint(std::string_view endpoints, std::string_view name) {
  std::vector<std::string> names;
  for (const std::string& entry : Split(endpoints, ',')) {
    if (entry.empty()) continue;
    size_t eq = entry.find('=');
    size_t colon = entry.rfind(':');
    if (eq == std::string::npos || colon == std::string::npos || colon < eq) {
      return Status::InvalidArgument(
          fmt::format("COHORT_EXEC_ENDPOINTS: \"{}\" is not NAME=host:port", entry));
    }
    names.push_back(entry.substr(0, eq));
    if (names.back() != name) continue;
    Endpoint endpoint;
    endpoint.host = entry.substr(eq + 1, colon - eq - 1);
    std::string_view port(entry.data() + colon + 1, entry.size() - colon - 1);
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), endpoint.port);
    if (ec != std::errc() || end != port.data() + port.size() || endpoint.port <= 0 ||
        endpoint.port > 65535 || endpoint.host.empty()) {
      return Status::InvalidArgument(
          fmt::format("COHORT_EXEC_ENDPOINTS: \"{}\" is not NAME=host:port", entry));
    }
    return endpoint;
  }
  if (names.empty()) {
    return Status::NotFound(fmt::format(
        "no task of this job serves commands (COHORT_EXEC_ENDPOINTS is empty), so \"{}\" "
        "cannot be reached: only an MPI job's workers serve",
        name));
  }
  return Status::NotFound(
      fmt::format("\"{}\" is not a task of this job that serves commands; "
                  "those are: {}",
                  name, Join(names, ", ")));
}

}  // namespace cohort::exec
