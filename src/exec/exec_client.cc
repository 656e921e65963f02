#include "exec/exec_client.h"

#include <fmt/format.h>

#include <cstdlib>

#include "common/strings.h"
#include "exec/exec_endpoints.h"
#include "exec/exec_session.h"

namespace cohort::exec {
namespace {

int Fail(const std::string& name, const std::string& why) {
  fmt::print(stderr, "cohort-exec: {}: {}\n", name, why);
  return 255;
}

}  // namespace

int RunRemote(const RunOptions& options) {
  const char* credential = ::getenv("COHORT_JOB_CREDENTIAL");
  if (credential == nullptr || *credential == '\0') {
    return Fail(options.name,
                "this task holds no job credential ($COHORT_JOB_CREDENTIAL): only the tasks of "
                "an MPI job start commands in each other");
  }
  const char* endpoints = ::getenv("COHORT_EXEC_ENDPOINTS");
  auto endpoint = FindEndpoint(endpoints ? endpoints : "", options.name);
  if (!endpoint.ok()) return Fail(options.name, endpoint.status().message());
  if (options.words.empty()) return Fail(options.name, "no command to run");
  ExecRequest request;
  request.credential = credential;
  request.command = Join(options.words, " ");
  ExecAnswer answer = RunSession(*endpoint, request, options.connect_for);
  if (!answer.error.empty()) return Fail(options.name, answer.error);
  return answer.ExitStatus();
}

}  // namespace cohort::exec
