// JSON forms of the model, shared by the API, the agent protocol, the state store and the CLI.
// Decoders never throw: a malformed document is an InvalidArgument naming the field.
#pragma once

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "model/agent_protocol.h"
#include "model/job.h"
#include "model/job_spec.h"
#include "model/node.h"
#include "model/store_access.h"
#include "model/upload_progress.h"

namespace cohort {

using Json = nlohmann::json;

Json ToJson(const Task& task);
Json ToJson(const Job& job);
StatusOr<Job> JobFromJson(const Json& j);  // JobSpec inside is trusted: it was validated once

Json ToJson(const JobEvent& event);
StatusOr<JobEvent> JobEventFromJson(const Json& j);

Json ToJson(const NodeInfo& info);
StatusOr<NodeInfo> NodeInfoFromJson(const Json& j);

Json ToJson(const TaskId& id);
StatusOr<TaskId> TaskIdFromJson(const Json& j);
Json ToJson(const StoreAccess& access);
StatusOr<StoreAccess> StoreAccessFromJson(const Json& j);
Json ToJson(const UploadProgress& progress);
Json ToJson(const RestoredCheckpoint& restored);
StatusOr<RestoredCheckpoint> RestoredCheckpointFromJson(const Json& j);
StatusOr<UploadProgress> UploadProgressFromJson(const Json& j);
Json ToJson(const TaskLaunch& launch);
StatusOr<TaskLaunch> TaskLaunchFromJson(const Json& j);
// A task's image pull, as agents report it and supervisors record it (agent/container_task.h).
Json ToJson(const ImagePull& pull);
StatusOr<ImagePull> ImagePullFromJson(const Json& j);
Json ToJson(const TaskReport& report);
StatusOr<TaskReport> TaskReportFromJson(const Json& j);
Json ToJson(const AgentReport& report);
StatusOr<AgentReport> AgentReportFromJson(const Json& j);
Json ToJson(const DesiredState& desired);
StatusOr<DesiredState> DesiredStateFromJson(const Json& j);

// Parses text as JSON; the error says where the syntax broke.
StatusOr<Json> ParseJson(std::string_view text);
// The text of `doc` for storing, or kInvalidArgument naming `what` if some string in it is not
// valid UTF-8 (which JSON cannot carry): refused before anything is written.
StatusOr<std::string> EncodeRecord(const Json& doc, std::string_view what);

}  // namespace cohort
