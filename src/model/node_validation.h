// Checks of what an agent says about its node (POST /api/v1/agents/register), which is outside
// input like a job spec: every problem is reported at once, each naming its field
// ("gpus[3].index: ..."). The bounds are in model/limits.h.
#pragma once

#include <string_view>

#include "common/status.h"
#include "model/node.h"

namespace cohort {

// [A-Za-z0-9][A-Za-z0-9._-]{0,63}: a node id appears in URLs, file names and task environments.
bool IsValidNodeId(std::string_view id);
inline constexpr std::string_view kNodeIdRule =
    "use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit";
// "node: \"../x\" is not a valid node id: ..." for a node id from a URL, or Ok.
Status CheckNodeId(std::string_view id);

// A label name, of a node or in a job's constraints: 1 to kMaxLabelKeyLength letters, digits,
// '.', '_', '/' and '-'.
bool IsValidLabelKey(std::string_view key);

// InvalidArgument "invalid node registration" with one detail per problem, or Ok.
Status ValidateNodeInfo(const NodeInfo& info);

}  // namespace cohort
