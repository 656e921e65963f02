// One command run in a task of the job through its exec service (exec/exec_service.h), from
// the caller's side: connect (again while the service is not listening yet), send the request,
// and wait for the answer, passing streamed output on as it comes. What `cohort-exec NAME ...`
// and srun each do per command.
#pragma once

#include <functional>
#include <mutex>
#include <string_view>

#include "common/time.h"
#include "exec/exec_endpoints.h"
#include "exec/exec_request.h"

namespace cohort::exec {

// Where a streamed command's output goes: `out` its stdout, `err` its stderr, a chunk at a time
// as it arrives (not cut at lines).
struct OutputSink {
  std::function<void(std::string_view)> out;
  std::function<void(std::string_view)> err;
};

// Ends or signals a session from another thread (srun --kill-on-bad-exit, a signal to srun):
// its caller hangs up, and the service ends the command as it does for any caller that goes
// away; or asks the service to signal the command.
class SessionCancel {
 public:
  void Cancel();
  bool cancelled() const;
  // Has the service send signal `number` to the command's group (EncodeSignal), if the session
  // is open; what srun does with the signals it gets.
  void Signal(int number);

 private:
  friend class SessionConnection;
  mutable std::mutex mu_;
  int fd_ = -1;  // the session's socket while it is open
  bool cancelled_ = false;
};

// The command's end, or ExecAnswer::Refused saying why it did not run or why its end is unknown
// (the connection closed first, or `cancel` was used).
ExecAnswer RunSession(const Endpoint& endpoint, const ExecRequest& request, Duration connect_for,
                      const OutputSink& sink = {}, SessionCancel* cancel = nullptr);

}  // namespace cohort::exec
