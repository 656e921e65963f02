// How much CPU and memory each task uses, sampled every few seconds by the agent
// (docs/observability.md, "GPU and host metrics").
//
// A task is its supervisor's descendants: `cohortd run-task` puts the task's command in a
// process group of its own and is the child subreaper of everything it starts, so processes
// that leave the group (setsid, a daemon that double-forks) or lose their parent are still
// found below it. The agent puts tasks in no cgroup, so /proc is where the figures are:
//
// - CPU: the clock ticks of every live descendant (its own, and those of the children it has
//   waited for), plus those of the children the supervisor has waited for; the rate is the
//   change since the previous sample over the wall time between them. A process reaped outside
//   the tree, or by a parent that ignores SIGCHLD, takes its ticks with it: the rate is then
//   low for one sample, never negative.
// - Memory: the sum of the descendants' resident sets. Pages two processes share are counted
//   twice, as `ps` and `top` count them.
// - Reads: the bytes and read calls of the supervisor and its live descendants
//   (/proc/PID/io's rchar and syscr: os/proc_io.h), whose sum holds those of the processes
//   reaped in the tree; the rates are the change since the previous sample, never negative.
//   When one of the figures cannot be read (another account's process, to an agent that may
//   not trace it), the sample has no read rates rather than too low ones.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/time.h"
#include "model/job.h"
#include "model/resource_samples.h"
#include "os/proc_io.h"

namespace cohort::agent {

class TaskSampler {
 public:
  virtual ~TaskSampler() = default;
  // One sample per task whose supervisor (the pid in `supervisors`) still runs, stamped `now`.
  // Tasks left out of `supervisors` are forgotten: one that comes back starts afresh.
  virtual std::map<TaskId, TaskSample> Sample(const std::map<TaskId, pid_t>& supervisors,
                                              Timestamp now) = 0;
};

// Reads `proc_root` ("/proc", or a test's tree of <pid>/stat and <pid>/io files): every
// process's stat file once per sample, whatever the number of tasks, and the io files of the
// tasks' processes.
class ProcTaskSampler final : public TaskSampler {
 public:
  // The clock ticks per second and the page size default to this machine's (sysconf).
  explicit ProcTaskSampler(std::string proc_root = "/proc", int64_t ticks_per_second = 0,
                           int64_t page_size = 0);
  std::map<TaskId, TaskSample> Sample(const std::map<TaskId, pid_t>& supervisors,
                                      Timestamp now) override;

 private:
  struct Previous {
    int64_t ticks = 0;
    std::optional<ProcessIo> io;
    Timestamp at;
  };

  std::string proc_root_;
  int64_t ticks_per_second_;
  int64_t page_size_;
  std::map<TaskId, Previous> previous_;
};

}  // namespace cohort::agent
