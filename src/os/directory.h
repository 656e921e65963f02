// Directories with the owner and mode they must have, made so idempotently: every task of a
// job, on every node, fixes the same directories on shared storage before it starts.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "common/status.h"
#include "os/credentials.h"

namespace cohort {

// Makes `path` a directory of mode `mode` (permission bits and sticky/setgid bits, exactly),
// owned by `owner`, creating it if absent (its missing parents too, as this process's, 0755
// less the umask). With no `owner`, the directory keeps the owner it has, and its mode is set
// only if this process owns it. A symbolic link at `path` itself is never followed, and
// anything but a directory is refused. kInternal naming the path and the call that failed.
Status EnsureDirectory(const std::string& path, mode_t mode, std::optional<Owner> owner);

// Removes everything in `dir` (not `dir` itself) as `as`, or as this process if not given. A
// directory that another account could write in is emptied as that account: a root process
// that walked it could be sent, by a link swapped in at the right moment, to delete a file
// anywhere. kInternal if something is left.
Status EmptyDirectoryAs(const std::string& dir, std::optional<Owner> as);

}  // namespace cohort
