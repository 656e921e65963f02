// Who a task runs as, by the agent's policy. The policy is given the agent's own account, so
// both a root agent's rules and a plain user's run here whoever runs the test; the lookups are
// real (root and nobody exist on every Debian machine).
#include "agent/task_account.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace cohort::agent {
namespace {

const Account kRoot{0, 0, "root", "/root"};
const Account kAda{1000, 1000, "ada", "/home/ada"};

TEST(TaskAccounts, ARootAgentRunsATaskAsTheAccountItsUserNames) {
  TaskAccounts accounts(kRoot, false, "node-1");
  auto nobody = accounts.Resolve(RunAs{"nobody", {}, {}}, "/scratch");
  ASSERT_TRUE(nobody.ok()) << nobody.status().ToString();
  EXPECT_EQ(nobody->uid, 65534u);
  EXPECT_EQ(nobody->gid, 65534u);
  EXPECT_EQ(nobody->name, "nobody");
  EXPECT_EQ(nobody->home, "/nonexistent");
}

TEST(TaskAccounts, AMissingAccountIsAClearFailure) {
  TaskAccounts accounts(kRoot, true, "node-1");
  std::string name = "cohort-t-none-" + std::to_string(::getpid());
  auto missing = accounts.Resolve(RunAs{name, {}, {}}, "/scratch");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "no Unix account \"" + name +
                "\" on node-1: create it, or have an admin map the Cohort user to a uid");
}

TEST(TaskAccounts, RootTasksNeedTheFlag) {
  auto refused = TaskAccounts(kRoot, false, "node-1").Resolve(RunAs{"root", {}, {}}, "/s");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "the task would run as root (uid 0, user \"root\") on node-1, which this agent "
            "refuses: start the agent with --allow-root-tasks to run tasks of root");
  // A mapping to uid 0 is root too, whatever the name.
  auto mapped = TaskAccounts(kRoot, false, "node-1").Resolve(RunAs{"ada", 0u, 0u}, "/s");
  ASSERT_FALSE(mapped.ok());
  EXPECT_NE(mapped.status().message().find("--allow-root-tasks"), std::string::npos);

  auto allowed = TaskAccounts(kRoot, true, "node-1").Resolve(RunAs{"root", {}, {}}, "/s");
  ASSERT_TRUE(allowed.ok());
  EXPECT_EQ(allowed->uid, 0u);
}

TEST(TaskAccounts, AnAdminsMappingIsTakenAsItIs) {
  TaskAccounts accounts(kRoot, false, "node-1");
  // Ids that no entry of the user database has: the home is the task's scratch directory.
  auto mapped = accounts.Resolve(RunAs{"ada@example.com", 4'000'000'123u, 4'000'000'124u},
                                 "/data/tasks/1.1.w.0/work");
  ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
  EXPECT_EQ(mapped->uid, 4'000'000'123u);
  EXPECT_EQ(mapped->gid, 4'000'000'124u);
  EXPECT_EQ(mapped->name, "ada@example.com");
  EXPECT_EQ(mapped->home, "/data/tasks/1.1.w.0/work");
  // A mapped uid the node knows keeps its home.
  auto known = accounts.Resolve(RunAs{"someone", 65534u, 65534u}, "/s");
  ASSERT_TRUE(known.ok());
  EXPECT_EQ(known->home, "/nonexistent");
}

TEST(TaskAccounts, ANameThatCannotBeAnAccountOrNoNameAtAllIsRefused) {
  TaskAccounts accounts(kRoot, true, "node-1");
  auto bad = accounts.Resolve(RunAs{"ada@example.com", {}, {}}, "/s");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "the Cohort user \"ada@example.com\" is not a Unix account name (must be 1 to 32 "
            "letters, digits, '.', '_' or '-' (and may end in '$'), not starting with '-'): have "
            "an admin map the Cohort user to a uid");
  auto none = accounts.Resolve(RunAs{}, "/s");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(),
            "the master did not say which account runs the task (is it older than this agent?)");
}

TEST(TaskAccounts, AnAgentThatIsNotRootRunsEveryTaskAsItself) {
  TaskAccounts accounts(kAda, false, "node-1");
  for (const RunAs& asked : {RunAs{"bob", {}, {}}, RunAs{"root", {}, {}}, RunAs{"ada", 7u, 7u},
                             RunAs{"", {}, {}}, RunAs{"no such user!", {}, {}}}) {
    auto got = accounts.Resolve(asked, "/s");
    ASSERT_TRUE(got.ok()) << asked.user;
    EXPECT_EQ(got->uid, 1000u);
    EXPECT_EQ(got->name, "ada");
    EXPECT_EQ(got->home, "/home/ada");
  }
}

TEST(TaskAccounts, SaysWhoRunsTheTasks) {
  EXPECT_EQ(TaskAccounts(kAda, false, "n").Describe(),
            "not running as root: every task runs as ada (uid 1000)");
  EXPECT_EQ(TaskAccounts(kRoot, false, "n").Describe(),
            "running as root: each task runs as its job's user; tasks of root are refused "
            "(--allow-root-tasks would run them)");
  EXPECT_EQ(TaskAccounts(kRoot, true, "n").Describe(),
            "running as root: each task runs as its job's user; tasks of root run as root "
            "(--allow-root-tasks)");
}

}  // namespace
}  // namespace cohort::agent
