// Unix accounts, and giving up root for one of them in a child process before it execs a task
// (docs/security.md, "Tasks run as their user").
#pragma once

#include <sys/types.h>

#include <string>

#include "common/status.h"

namespace cohort {

// Who owns a file, or whom a process becomes.
struct Owner {
  uid_t uid = 0;
  gid_t gid = 0;
};

struct Account {
  uid_t uid = 0;
  gid_t gid = 0;  // the primary group
  std::string name;
  std::string home;
  // Its login shell; empty where the user database has none (or names no account).
  std::string shell = {};
};

// The account named `name` (getpwnam_r): kNotFound if the node has none, kInternal if its user
// database cannot be read.
StatusOr<Account> AccountNamed(const std::string& name);
// The account of `uid` (getpwuid_r); kNotFound if the node has no entry for it.
StatusOr<Account> AccountOfUid(uid_t uid);

// Makes this process `uid`:`gid` for good: no supplementary group but `gid` (setgroups), then
// setgid and setuid, each checked; then checks that every real, effective and saved id changed
// and that root cannot be regained, and sets PR_SET_NO_NEW_PRIVS so that no setuid program can
// give privileges back. Needs root. Only async-signal-safe calls, for a child between fork and
// exec. Returns nullptr, or the step that failed (errno says why).
const char* DropPrivileges(uid_t uid, gid_t gid);
// PR_SET_NO_NEW_PRIVS alone, for a process that is not root and so has nothing to drop. Same
// contract.
const char* ForbidNewPrivileges();

}  // namespace cohort
