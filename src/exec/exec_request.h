// What `cohort-exec` says to a task's exec service and what it answers (docs/job-spec.md, "MPI"):
// one line of JSON each way over TCP, the request first, the answer when the command has ended.
//   -> {"credential": "<the job's>", "command": "orted -mca ..."}
//   <- {"exit_code": 0} | {"signal": 9} | {"error": "why it did not run"}
// The command is shell text, run by /bin/sh -c inside the serving task, as ssh runs what it is
// given; its output goes to that task's log.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace cohort::exec {

// A request line longer than this is refused before it is read whole: a stranger who reaches
// the port makes the service hold no more.
inline constexpr size_t kMaxRequestBytes = 256 * 1024;

struct ExecRequest {
  std::string credential;
  std::string command;
};

struct ExecAnswer {
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string error;  // empty: it ran
  static ExecAnswer Exited(int code) { return ExecAnswer{code, std::nullopt, ""}; }
  static ExecAnswer Signaled(int signal) { return ExecAnswer{std::nullopt, signal, ""}; }
  static ExecAnswer Refused(std::string why) {
    return ExecAnswer{std::nullopt, std::nullopt, std::move(why)};
  }
  // As a shell or ssh would: the exit code, 128 + the signal, or 255 when it did not run.
  int ExitStatus() const;
};

std::string EncodeRequest(const ExecRequest& request);
// kInvalidArgument naming what is wrong: not JSON, a field missing or of another type, an
// unknown field, an empty command.
StatusOr<ExecRequest> DecodeRequest(std::string_view line);

std::string EncodeAnswer(const ExecAnswer& answer);
StatusOr<ExecAnswer> DecodeAnswer(std::string_view line);

}  // namespace cohort::exec
