// What `cohort-exec` says to a task's exec service and what it answers (docs/job-spec.md, "MPI"):
// one line of JSON each way over TCP, the request first, the answer when the command has ended.
//   -> {"credential": "<the job's>", "command": "orted -mca ..."}
//   <- {"exit_code": 0} | {"signal": 9} | {"error": "why it did not run"}
// The command is shell text, run by /bin/sh -c inside the serving task, as ssh runs what it is
// given; its output goes to that task's log.
//
// A request may also carry variables to set over the task's own ("env"), a working directory
// ("cwd"), a slice of the task's GPUs ("gpus": {"index": I, "count": C}: CUDA_VISIBLE_DEVICES
// becomes the task's GPUs I*C to I*C+C-1), and "stream": true, which sends the command's output
// back to the caller instead of to the task's log, as frames ("out N\n" or "err N\n" and N
// bytes), the answer last as a frame "end N\n" (what srun needs, docs/slurm.md).
//
// While the command runs, the caller may send lines "signal N\n" (N from 1 to 64): the service
// sends signal N to the command's process group, as srun passes on the signals it gets.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace cohort::exec {

// A request line longer than this is refused before it is read whole: a stranger who reaches
// the port makes the service hold no more.
inline constexpr size_t kMaxRequestBytes = 256 * 1024;

// At most this many variables in a request's "env".
inline constexpr size_t kMaxRequestVariables = 512;

struct GpuSlice {
  int index = 0;
  int count = 1;
  bool operator==(const GpuSlice&) const = default;
};

struct ExecRequest {
  std::string credential;
  std::string command;
  std::map<std::string, std::string> env = {};
  std::string cwd = {};  // empty: the service's own
  std::optional<GpuSlice> gpus = {};
  bool stream = false;
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
// A frame of a streamed session: "KIND N\n" and N bytes (KIND: out, err, end).
std::string EncodeFrame(std::string_view kind, std::string_view payload);
// The GPUs of `slice` among `visible` (a CUDA_VISIBLE_DEVICES value); kInvalidArgument when the
// slice lies past them.
StatusOr<std::string> SliceGpus(std::string_view visible, const GpuSlice& slice);
StatusOr<ExecAnswer> DecodeAnswer(std::string_view line);

// "signal N\n", and back: what a caller sends to have the service signal its command. Not one
// (another line, a number out of 1 to 64): nothing.
std::string EncodeSignal(int number);
std::optional<int> DecodeSignal(std::string_view line);
// The longest such line, the newline included: the service keeps no more of what a caller sends.
inline constexpr size_t kMaxSignalLineBytes = 16;

}  // namespace cohort::exec
