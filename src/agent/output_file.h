// A task's output file on the agent's disk, kept bounded without changing its offsets: the
// supervisor punches its oldest bytes out (fallocate PUNCH_HOLE) so that only about the last
// `keep` bytes take space, while the file keeps its length and every byte its offset, the
// offsets the master's copy uses too. Punched bytes read as zeros; the agent learns where the
// kept bytes start (FirstKeptByte) and ships from there, telling the master what it skipped.
//
// On a file system without holes, nothing is punched and the file grows as the task writes.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace cohort::agent {

// Punches out of `fd` every whole MiB before its last `keep` bytes that `*trimmed` (where an
// earlier call stopped; 0 at first) does not cover yet, and moves `*trimmed` on.
// kFailedPrecondition if the file system has no holes (then later calls need not try), kInternal
// for other errors.
Status TrimOutput(int fd, int64_t keep, int64_t* trimmed);

// The offset of the first byte of `fd` not punched out; 0 if none was; `size` if every byte
// before `size` was.
int64_t FirstKeptByte(int fd, int64_t size);

}  // namespace cohort::agent
