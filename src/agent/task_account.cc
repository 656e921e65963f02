#include "agent/task_account.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>

#include "common/strings.h"
#include "model/json.h"

namespace cohort::agent {

TaskAccounts::TaskAccounts(Account self, bool allow_root_tasks, std::string node)
    : self_(std::move(self)), allow_root_tasks_(allow_root_tasks), node_(std::move(node)) {}

namespace {

// The accounts of the test seam (task_account.h), if the environment names any.
std::set<std::string> AbsentForTests() {
  const char* names = std::getenv("COHORT_TEST_ABSENT_ACCOUNTS");
  std::set<std::string> absent;
  if (!names) return absent;
  for (const std::string& name : Split(names, ',')) {
    if (!name.empty()) absent.insert(name);
  }
  if (!absent.empty()) {
    spdlog::warn(
        "COHORT_TEST_ABSENT_ACCOUNTS (a seam for tests only): tasks of {} are refused "
        "as if this node had no such account",
        Join(std::vector<std::string>(absent.begin(), absent.end()), ", "));
  }
  return absent;
}

}  // namespace

TaskAccounts TaskAccounts::OfThisProcess(bool allow_root_tasks, std::string node) {
  uid_t uid = ::geteuid();
  auto self = AccountOfUid(uid);
  // Containers often run under a uid that /etc/passwd does not know.
  const char* home = std::getenv("HOME");
  TaskAccounts accounts =
      self.ok() ? TaskAccounts(*self, allow_root_tasks, std::move(node))
                : TaskAccounts(Account{uid, ::getegid(), std::to_string(uid), home ? home : "/"},
                               allow_root_tasks, std::move(node));
  accounts.TreatAsAbsent(AbsentForTests());
  return accounts;
}

StatusOr<Account> TaskAccounts::Resolve(const RunAs& run_as, const std::string& scratch) const {
  if (!root()) {
    if (run_as.user != self_.name || (run_as.uid && *run_as.uid != self_.uid)) {
      spdlog::debug("the task asks to run as {}; this agent is not root, so it runs as {}",
                    run_as.user.empty() ? "(nobody named)" : run_as.user, self_.name);
    }
    return self_;
  }
  Account account;
  if (run_as.uid && run_as.gid) {
    // An admin's mapping: the ids are taken as they are; the name only names them.
    account.uid = *run_as.uid;
    account.gid = *run_as.gid;
    account.name = run_as.user;
    auto known = AccountOfUid(account.uid);
    account.home = known.ok() ? known->home : scratch;
  } else {
    if (run_as.user.empty()) {
      return Status::FailedPrecondition(
          "the master did not say which account runs the task (is it older than this agent?)");
    }
    if (auto problem = UnixAccountNameProblem(run_as.user)) {
      return Status::FailedPrecondition(
          fmt::format("the Cohort user {} is not a Unix account name ({}): have an admin map "
                      "the Cohort user to a uid",
                      Json(run_as.user).dump(), *problem));
    }
    auto found = absent_.count(run_as.user) ? StatusOr<Account>(Status::NotFound("absent"))
                                            : AccountNamed(run_as.user);
    if (found.status().code() == StatusCode::kNotFound) {
      return Status::NotFound(fmt::format(
          "no Unix account \"{}\" on {}: create it, or have an admin map the Cohort user to a uid",
          run_as.user, node_));
    }
    if (!found.ok())
      return Status::Internal(fmt::format("on {}: {}", node_, found.status().message()));
    account = *found;
  }
  if (account.uid == 0 && !allow_root_tasks_) {
    return Status::FailedPrecondition(fmt::format(
        "the task would run as root (uid 0, user \"{}\") on {}, which this agent refuses: start "
        "the agent with --allow-root-tasks to run tasks of root",
        account.name, node_));
  }
  return account;
}

std::string TaskAccounts::Describe() const {
  if (!root()) {
    return fmt::format("not running as root: every task runs as {} (uid {})", self_.name,
                       self_.uid);
  }
  return fmt::format("running as root: each task runs as its job's user; tasks of root {}",
                     allow_root_tasks_ ? "run as root (--allow-root-tasks)"
                                       : "are refused (--allow-root-tasks would run them)");
}

}  // namespace cohort::agent
