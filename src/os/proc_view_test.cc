// A task's view of /proc, in a forked child that does what a supervisor's child does: hides the
// other accounts' processes, then becomes an account of its own. Needs root (as CI runs the
// tests); skipped otherwise.
#include "os/proc_view.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>

#include "os/credentials.h"

namespace cohort {
namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

TEST(ProcView, ATaskSeesOnlyItsOwnAccountsProcesses) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting /proc needs root";
  const std::string parent = "/proc/" + std::to_string(::getpid());
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    if (const char* failed = HideOtherAccountsProcesses()) {
      out = std::string(errno == EPERM ? "not permitted: " : "failed: ") + failed + ": " +
            strerror(errno);
    } else if (const char* dropped = DropPrivileges(65534, 65534)) {
      out = std::string("drop failed: ") + dropped;
    } else {
      out += Exists(parent) ? "parent visible;" : "parent hidden;";
      out += Exists(parent + "/cmdline") ? "cmdline visible;" : "cmdline hidden;";
      out += Exists("/proc/self/cmdline") ? "self visible" : "self hidden";
    }
    (void)!::write(fds[1], out.data(), out.size());
    _exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  // Root without CAP_SYS_ADMIN (a container): the agent runs its tasks with the machine's /proc.
  if (out.starts_with("not permitted: ")) GTEST_SKIP() << out;
  EXPECT_EQ(out, "parent hidden;cmdline hidden;self visible");
  // The machine's /proc is as it was: the mount stayed in the child's namespace.
  EXPECT_TRUE(Exists(parent + "/cmdline"));
  std::ifstream mounts("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mounts, line)) EXPECT_EQ(line.find("hidepid"), std::string::npos) << line;
}

}  // namespace
}  // namespace cohort
