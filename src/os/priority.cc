#include "os/priority.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cohort {
namespace {

constexpr const char* kAutogroup = "/proc/self/autogroup";

}  // namespace

const char* LowerPriority(int nice) {
  nice = std::clamp(nice, 0, 19);
  if (NiceValue() < nice && ::setpriority(PRIO_PROCESS, 0, nice) != 0) return "setpriority";
  // The group is the whole session's: one that this process does not lead is its caller's too
  // (a shell's, a test runner's), and stays as it is.
  if (::getsid(0) != ::getpid()) return nullptr;
  // Absent without CONFIG_SCHED_AUTOGROUP; ignored by the kernel (but still writable) for a
  // process in a cgroup of its own, where nice values weigh as they are.
  int fd = ::open(kAutogroup, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? nullptr : "open /proc/self/autogroup";
  const char* failed = nullptr;
  if (SessionGroupNiceValue() < nice) {
    char value[8];
    int n = std::snprintf(value, sizeof(value), "%d", nice);
    if (::write(fd, value, static_cast<size_t>(n)) != n) failed = "write /proc/self/autogroup";
  }
  ::close(fd);
  return failed;
}

int NiceValue() {
  errno = 0;
  int nice = ::getpriority(PRIO_PROCESS, 0);
  return errno == 0 ? nice : 0;
}

int SessionGroupNiceValue() {
  // "/autogroup-76951 nice 0"
  int fd = ::open(kAutogroup, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[128] = {};
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return 0;
  const char* at = std::strstr(buf, " nice ");
  return at ? std::atoi(at + 6) : 0;
}

}  // namespace cohort
