// The privilege drop of a task, in a forked child of the test: what the child can still do is
// what a task could. Needs root (as CI runs the tests); skipped otherwise.
#include "os/credentials.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "common/strings.h"
#include "os/process.h"

namespace cohort {
namespace {

// Runs `body` in a forked child; returns what it wrote to its pipe (one line per finding).
template <typename Body>
std::string InChild(Body body) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string out = body();
    (void)!::write(fds[1], out.data(), out.size());
    _exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return out;
}

std::string StatusField(const std::string& field) {
  for (const auto& line : Split(ReadFileOrEmpty("/proc/self/status"), '\n')) {
    if (line.starts_with(field + ":")) return std::string(Trim(line.substr(field.size() + 1)));
  }
  return "?";
}

class DropPrivilegesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "dropping privileges needs root";
    auto nobody = AccountNamed("nobody");
    ASSERT_TRUE(nobody.ok()) << nobody.status().ToString();
    nobody_ = *nobody;
    ASSERT_NE(nobody_.uid, 0u);
  }
  Account nobody_;
};

TEST_F(DropPrivilegesTest, LeavesOnlyTheAccountsIdsAndNoWayBack) {
  std::string out = InChild([&] {
    // Supplementary groups the agent's process might have had: all must go.
    gid_t extra[] = {4, 24, 27};
    if (::setgroups(3, extra) != 0) return std::string("setup failed\n");
    if (const char* failed = DropPrivileges(nobody_.uid, nobody_.gid)) {
      return std::string("drop failed: ") + failed + "\n";
    }
    std::string r;
    uid_t ru, eu, su;
    gid_t rg, eg, sg;
    ::getresuid(&ru, &eu, &su);
    ::getresgid(&rg, &eg, &sg);
    r += "uids " + std::to_string(ru) + " " + std::to_string(eu) + " " + std::to_string(su) + "\n";
    r += "gids " + std::to_string(rg) + " " + std::to_string(eg) + " " + std::to_string(sg) + "\n";
    gid_t groups[64];
    int n = ::getgroups(64, groups);
    r += "groups";
    for (int i = 0; i < n; ++i) r += " " + std::to_string(groups[i]);
    r += "\n";
    r += "no_new_privs " + std::to_string(::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)) + "\n";
    r += "CapEff " + StatusField("CapEff") + "\n";
    errno = 0;
    int back = ::setuid(0);
    r += "setuid(0) " + std::to_string(back) + " " + (errno == EPERM ? "EPERM" : "?") + "\n";
    errno = 0;
    back = ::setgroups(0, nullptr);
    r += "setgroups " + std::to_string(back) + " " + (errno == EPERM ? "EPERM" : "?") + "\n";
    errno = 0;
    back = ::kill(1, 0);
    r += "kill(1) " + std::to_string(back) + " " + (errno == EPERM ? "EPERM" : "?") + "\n";
    int fd = ::open("/proc/1/environ", O_RDONLY);
    r += std::string("environ of pid 1 ") + (fd < 0 && errno == EACCES ? "EACCES" : "readable") +
         "\n";
    return r;
  });
  std::string u = std::to_string(nobody_.uid);
  std::string g = std::to_string(nobody_.gid);
  EXPECT_EQ(out, "uids " + u + " " + u + " " + u + "\n" +      //
                     "gids " + g + " " + g + " " + g + "\n" +  //
                     "groups " + g + "\n" +                    //
                     "no_new_privs 1\n"
                     "CapEff 0000000000000000\n"
                     "setuid(0) -1 EPERM\n"
                     "setgroups -1 EPERM\n"
                     "kill(1) -1 EPERM\n"
                     "environ of pid 1 EACCES\n");
}

TEST_F(DropPrivilegesTest, SaysWhichStepFailed) {
  std::string out = InChild([&] {
    if (DropPrivileges(nobody_.uid, nobody_.gid) != nullptr) return std::string("first drop\n");
    // No longer root: the next drop cannot even set the groups, and says so.
    const char* failed = DropPrivileges(0, 0);
    return std::string(failed ? failed : "(none)") + (errno == EPERM ? " EPERM" : " ?") + "\n";
  });
  EXPECT_EQ(out, "setgroups EPERM\n");
}

TEST(Accounts, LooksUpByNameAndUid) {
  auto root = AccountNamed("root");
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(root->uid, 0u);
  EXPECT_EQ(root->gid, 0u);
  EXPECT_EQ(root->name, "root");
  EXPECT_EQ(root->home, "/root");
  auto by_uid = AccountOfUid(0);
  ASSERT_TRUE(by_uid.ok());
  EXPECT_EQ(by_uid->name, "root");

  std::string missing = "cohort-t-none-" + std::to_string(::getpid());
  auto none = AccountNamed(missing);
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(), "no Unix account \"" + missing + "\"");
  EXPECT_EQ(AccountOfUid(4'000'000'123).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace cohort
