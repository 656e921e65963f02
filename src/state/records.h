// What a StateStore keeps of jobs, nodes and events, shared by every store so that they all refuse
// the same things.
//
// A record the master cannot load back stops it from starting at all (LoadJobs and LoadNodes fail
// on it), which is worse than any refused write. So a record is checked before anything is
// written: it must decode as a load decodes it (what passes loads), and decode to what was given
// (a node whole, a job's spec).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <map>
#include "common/status.h"

#include "model/account.h"
#include "model/job.h"
#include "model/node.h"
#include "model/runtime_history_rows.h"
#include "model/secret.h"
#include "model/sweep_record.h"
#include "state/audit.h"
#include "state/usage.h"

namespace cohort::state {

// The JSON text of a job or a node's NodeInfo, or kInvalidArgument (nothing to store) if it holds
// text that is not UTF-8, would not load back, or would load back changed.
StatusOr<std::string> EncodeJobRecord(const Job& job);
StatusOr<std::string> EncodeNodeRecord(const NodeInfo& info);

// Decode what the Encode functions wrote; kInternal if the stored text is damaged.
StatusOr<Job> DecodeJobRecord(std::string_view text);
StatusOr<NodeInfo> DecodeNodeRecord(std::string_view text);

// A sweep's record as stored: the text of its doc; kInvalidArgument (nothing to store) if the
// doc or a column's text is not UTF-8, or the id is not positive. DecodeSweepDoc reads the text
// back; kInternal if it is damaged.
StatusOr<std::string> EncodeSweepRecord(const SweepRecord& sweep);
StatusOr<nlohmann::json> DecodeSweepDoc(std::string_view text);

// A user's team roles as stored: {"team": "role"}. Encode refuses team names that are not
// UTF-8; Decode is kInternal on damaged text or an unknown role.
StatusOr<std::string> EncodeUserTeams(const User& user);
StatusOr<std::map<std::string, TeamRole>> DecodeUserTeams(std::string_view text);

// A secret as a store may keep it: a valid name (model/secret.h), an owner, a scope, and a value
// that ValidateSecretValue takes; kInvalidArgument otherwise, never quoting the value.
Status CheckSecret(const Secret& secret);

// The events saved with job `job`: each must name that job (an event filed under another job
// would be a caller's bug hidden in someone else's history), and their text must be UTF-8, as
// they are served as JSON. kInvalidArgument otherwise.
Status CheckEvents(JobId job, const std::vector<JobEvent>& events);
// The same for task holds saved with job `job`; and an audit entry's text must be UTF-8.
Status CheckUsage(JobId job, const std::vector<TaskUsage>& usage);
Status CheckAuditEntry(const AuditEntry& entry);

// A change to the runtime history as a store may keep it: keys that are UTF-8 and not empty, a
// positive sample count and last use, a mean that is finite and not negative (what
// RuntimeHistory loads back); kInvalidArgument naming the first bad row otherwise.
Status CheckHistoryChange(const RuntimeHistoryChange& change);

// The task holds a job's record tells of, for jobs stored before holds were written (the
// migration to schema 4): the current attempt's tasks as they are, and each earlier attempt as
// its spec's task groups from its start to its end (elastic growth before then is not known).
std::vector<TaskUsage> UsageFromRecord(const Job& job);

}  // namespace cohort::state
