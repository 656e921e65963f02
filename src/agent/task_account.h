// Who each task runs as on this node (docs/security.md, "Tasks run as their user").
//
// An agent running as root starts each task as the Unix account its job's user names
// (TaskLaunch::run_as): the name is looked up on this node, or the uid and gid an admin mapped the
// user to are taken as they are. A task of root is refused unless the agent was started with
// --allow-root-tasks. An agent that is not root cannot start anything as anyone else, so every
// task runs as the agent's own account.
//
// A test seam, for tests only: an agent started with COHORT_TEST_ABSENT_ACCOUNTS=name,name,...
// in its environment behaves as if this node had no Unix account of those names (so that one
// machine can play a node that lacks an account another has: tests/integration/
// start_failure_test.cc). It says so in its log at start.
#pragma once

#include <set>
#include <string>

#include "common/status.h"
#include "model/run_as.h"
#include "os/credentials.h"

namespace cohort::agent {

class TaskAccounts {
 public:
  // `self`: the account the agent runs as; `node`: this node's name, for messages.
  TaskAccounts(Account self, bool allow_root_tasks, std::string node);
  // The policy of this process: its effective uid's account (a uid the user database does not
  // know is named by its number, with $HOME as its home).
  // The test seam above is read here.
  static TaskAccounts OfThisProcess(bool allow_root_tasks, std::string node);
  // The test seam: these names are looked up as if the node had no such account.
  void TreatAsAbsent(std::set<std::string> names) { absent_ = std::move(names); }

  // The account a task that asks for `run_as` runs as. `scratch` is the task's scratch
  // directory, the home of a mapped uid the node has no entry for. An error's message is meant
  // for the job's user ("no Unix account \"ada\" on node-1: create it, or ..."); kNotFound
  // when the node has no account of the name (another node may have it), kFailedPrecondition
  // for a refusal, kInternal if the user database cannot be read.
  StatusOr<Account> Resolve(const RunAs& run_as, const std::string& scratch) const;

  bool root() const { return self_.uid == 0; }
  const Account& self() const { return self_; }
  // One line for the agent's log at start: who runs the tasks.
  std::string Describe() const;

 private:
  Account self_;
  bool allow_root_tasks_;
  std::string node_;
  std::set<std::string> absent_;
};

}  // namespace cohort::agent
