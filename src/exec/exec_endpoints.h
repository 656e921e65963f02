// Where each serving task of a job listens: $COHORT_EXEC_ENDPOINTS, "NAME=host:port,..."
// (framework/frameworks.h), read by `cohort-exec NAME ...`.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace cohort::exec {

struct Endpoint {
  std::string host;
  int port = 0;
};

// The endpoint of `name` in `endpoints`; kNotFound listing the names there are, kInvalidArgument
// for a malformed list.
StatusOr<Endpoint> FindEndpoint(std::string_view endpoints, std::string_view name);

}  // namespace cohort::exec
