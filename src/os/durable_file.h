// Files that must survive a crash whole or not at all: tokens, credentials, certificates, a
// task's state files, the master's log ends. The one place that writes, fsyncs and renames, so
// that a short write, EINTR or a full disk is handled the same way everywhere.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "common/status.h"

namespace cohort {

// A failed system call on a file as a Status: a full disk or quota (ENOSPC, EDQUOT, EFBIG) is
// kResourceExhausted, anything else kInternal; the message is "<doing>: <strerror(err)>".
Status FileError(int err, std::string_view doing);

// Writes all of `data` to `fd`, retrying short writes and EINTR; errors name `path`.
Status WriteAll(int fd, std::string_view data, std::string_view path);

// Makes the entries of `dir` durable: a file created, renamed or removed in it.
Status SyncDirectory(const std::string& dir);

// What a replaced file survives once WriteFileAtomically returns OK.
enum class Durability {
  // A crash of the machine: the file and its directory are fsynced. Tokens, credentials,
  // certificates, a task's exit status.
  kMachineCrash,
  // A crash of the writer, not of the machine: no fsync. For files whose meaning ends with the
  // machine's boot, e.g. a task's pid files and launch spec (a reboot ends the task anyway), where
  // two fsyncs per task were most of an agent's time to start a gang.
  kProcessCrash,
};

// Replaces `path` with `content` through PATH.tmp, made anew with exactly `mode` (a key is never
// readable by others, not even for a moment; the umask does not apply), written whole, renamed
// over `path`, and with kMachineCrash fsynced before the rename and the directory synced after.
// A reader sees the old file or the new one. On failure PATH.tmp is removed and `path` is as it
// was.
Status WriteFileAtomically(const std::string& path, std::string_view content, mode_t mode = 0644,
                           Durability durability = Durability::kMachineCrash);

}  // namespace cohort
