// What a process has read so far, as /proc/<pid>/io says (proc(5)): how the agent knows whether
// a task reads its input in many small calls (agent/task_sampler.h, master/advisor.h).
//
// The figures are the whole thread group's, and they include those of the children it has
// waited for (the kernel adds a reaped child's counters to its parent's), so a process tree's
// total does not drop when one of its processes ends and its parent reaps it.
//
// Reading another account's process needs the right to trace it (PTRACE_MODE_READ): an agent
// that is not root, or one in a container without CAP_SYS_PTRACE, may be refused.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace cohort {

struct ProcessIo {
  int64_t read_bytes = 0;  // rchar: bytes read() and its kin returned, from any file or socket
  int64_t read_calls = 0;  // syscr: read calls made
};

// From the text of /proc/<pid>/io; nothing if rchar or syscr is missing or not a count.
std::optional<ProcessIo> ParseProcessIo(std::string_view text);

// /proc/<pid>/io under `proc_root`. kNotFound when the process is gone (it ended since it was
// listed); kPermissionDenied when it may not be read; kInternal for anything else (a kernel
// without I/O accounting, a file that is not such a text).
StatusOr<ProcessIo> ReadProcessIo(const std::string& proc_root, pid_t pid);

}  // namespace cohort
