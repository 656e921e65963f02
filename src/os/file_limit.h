// The process's limit on open file descriptors (RLIMIT_NOFILE). Every connection to the master
// is one, so the master raises the soft limit as far as it may, and sizes its connection cap
// below it.
#pragma once

#include <cstdint>

namespace cohort {

// Raises the soft limit to the hard limit (at most kMaxOpenFiles); returns the soft limit in
// force afterwards.
int64_t RaiseOpenFileLimit();
inline constexpr int64_t kMaxOpenFiles = int64_t{1} << 20;

}  // namespace cohort
