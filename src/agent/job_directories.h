// The directories of a job that outlive its tasks (checkpoints, outputs, logs: the master's
// framework::JobDirectories, on storage every node sees), given to the job's account by the agent
// before each of its tasks starts (docs/security.md): owned by the account, checkpoints and logs
// 0700, outputs 0750 (its group may read the results). Every task of the job, on every node,
// does the same, so it is idempotent.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "model/agent_protocol.h"
#include "os/credentials.h"

namespace cohort::agent {

// Creates or fixes the job directories `launch` names, for `account`. An agent that is not
// root (`as_root` false) cannot give a directory away: it creates what is missing and sets the
// mode of what it owns. A directory the master names must be an absolute path ending in
// <job id>/checkpoints, /outputs or /logs, so that not even a master gone wrong can have a root
// agent give away any other directory. Returns the directories prepared; kFailedPrecondition
// naming the directory and the reason, in words for the job's user.
StatusOr<std::vector<std::string>> PrepareJobDirectories(const TaskLaunch& launch,
                                                         const Account& account, bool as_root);

}  // namespace cohort::agent
