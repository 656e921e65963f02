// The priority tasks run at, in forked children: a session leader lowers its session's group as
// well, any other process only itself (its session's group is its caller's).
#include "os/priority.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace cohort {
namespace {

// Runs `body` in a forked child, which exits with what it returns (0: as expected).
template <typename Body>
int InChild(Body body) {
  pid_t pid = ::fork();
  if (pid == 0) _exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool HasAutogroup() { return std::ifstream("/proc/self/autogroup").good(); }

TEST(Priority, ASessionLeaderLowersItselfAndItsSessionsGroup) {
  EXPECT_EQ(InChild([] {
              if (::setsid() < 0) return 1;
              if (LowerPriority(19) != nullptr) return 2;
              if (NiceValue() != 19) return 3;
              if (HasAutogroup() && SessionGroupNiceValue() != 19) return 4;
              // Never raised again.
              if (LowerPriority(5) != nullptr || NiceValue() != 19) return 5;
              return 0;
            }),
            0);
}

TEST(Priority, AProcessThatDoesNotLeadItsSessionLeavesTheGroupAsItWas) {
  const int group_before = SessionGroupNiceValue();
  EXPECT_EQ(InChild([] {
              if (LowerPriority(19) != nullptr) return 1;
              return NiceValue() == 19 ? 0 : 2;
            }),
            0);
  EXPECT_EQ(SessionGroupNiceValue(), group_before) << "the test's own session was lowered";
}

}  // namespace
}  // namespace cohort
