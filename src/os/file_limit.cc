#include "os/file_limit.h"

#include <sys/resource.h>

#include <algorithm>

namespace cohort {

int64_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  const rlim_t want = std::min<rlim_t>(limit.rlim_max, static_cast<rlim_t>(kMaxOpenFiles));
  if (limit.rlim_cur < want) {
    rlimit raised = limit;
    raised.rlim_cur = want;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? kMaxOpenFiles : static_cast<int64_t>(limit.rlim_cur);
}

}  // namespace cohort
