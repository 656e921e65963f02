// A node's desired state as the answer to its agent's sync: the text JsonText(ToJson(state))
// would be, written a task at a time. A node's state is up to kMaxNodeTaskTextBytes of text
// (model/limits.h); the whole document as a tree beside the state and its text took twice that
// again, and glibc kept it (docs/reliability.md, "Floods and hostile input").
#pragma once

#include <string>

#include "model/agent_protocol.h"

namespace cohort::api {

std::string DesiredStateText(const DesiredState& desired);

}  // namespace cohort::api
