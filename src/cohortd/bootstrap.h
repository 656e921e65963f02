// What the first start of a master sets up so that the cluster is usable without any
// configuration, and safe: an admin user with a token, a join token for agents, each in a file
// only the master's account can read (docs/security.md, "The first start").
#pragma once

#include <string>

#include "common/status.h"
#include "master/master.h"

namespace cohort::cohortd {

inline constexpr const char* kAdminTokenFile = "admin-token";
inline constexpr const char* kJoinTokenFile = "join-token";

// With no user yet: creates `admin_user` as a cluster admin and writes a token of theirs to
// <data_dir>/admin-token (0600). Without a valid join token in <data_dir>/join-token: makes one
// and writes it there (0600). Each token is written to its file before the master stores it, so
// a crash in between leaves at worst a file whose token the next start replaces. Tightens the
// modes of the data directory (0711: task users pass through to the storage under it), the
// database (0600) and the task logs (0700).
Status BootstrapAccess(master::Master& master, const std::string& data_dir,
                       const std::string& admin_user);

// The name of the Unix account this process runs as ("root", "ada").
std::string ProcessUserName();

}  // namespace cohort::cohortd
