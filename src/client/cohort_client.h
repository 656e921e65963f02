// The typed client of Cohort's API (docs/api.md), shared by the CLI and the agent. Turns API
// errors back into a Status with the server's code, message and details.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/http_client.h"
#include "model/agent_protocol.h"
#include "model/job.h"
#include "model/json.h"
#include "model/node.h"

namespace cohort::client {

inline constexpr const char* kDefaultMasterUrl = "http://127.0.0.1:7420";

// 32 random hex digits: a name for one submission.
std::string NewRequestId();

class CohortClient {
 public:
  static StatusOr<std::unique_ptr<CohortClient>> Create(std::string_view master_url);

  // Names the caller on every call (X-Cohort-User), the name the master records in its audit
  // log (docs/security.md). Empty: none is sent.
  void set_user(std::string user) { user_ = std::move(user); }

  // Jobs. `spec_text` is YAML or JSON; the master validates it. `request_id` names the
  // submission (Idempotency-Key): when the master cannot be reached or does not answer in time,
  // the call tries again with it, and a master that did create the job returns that job instead
  // of a second one. Empty: a new random id (NewRequestId).
  StatusOr<Job> Submit(std::string_view spec_text, std::string_view user,
                       std::string request_id = {});
  StatusOr<std::vector<Job>> ListJobs(std::optional<JobState> state = std::nullopt,
                                      size_t limit = 0);
  StatusOr<Job> GetJob(JobId id);
  // Returns once the job's version exceeds `version`, or after `timeout` with the job as it is.
  StatusOr<Job> WaitJob(JobId id, uint64_t version, Duration timeout);
  StatusOr<Job> Kill(JobId id);
  StatusOr<std::vector<JobEvent>> Events(JobId id);
  // The raw explanation document (GET /api/v1/jobs/{id}/explain).
  StatusOr<Json> Explain(JobId id);
  // `task`: "worker/0" or empty for every task; `attempt` 0: the current one.
  Status Logs(JobId id, std::string_view task, int attempt, bool follow,
              const std::function<bool(std::string_view)>& on_data);
  // The raw node documents (GET /api/v1/nodes).
  StatusOr<Json> Nodes();
  // Admin: the node document after the change.
  StatusOr<Json> DrainNode(const std::string& node, const std::string& reason);
  StatusOr<Json> UndrainNode(const std::string& node);
  Status RemoveNode(const std::string& node);

  // Teams: the raw team documents (GET /api/v1/teams), and admin changes.
  StatusOr<Json> Teams();
  StatusOr<Json> SetTeam(const std::string& name, int64_t guaranteed_gpus,
                         std::optional<int64_t> max_gpus);
  Status DeleteTeam(const std::string& name);

  // Accounting and audit: the raw answers of GET /api/v1/usage and /api/v1/audit, with these
  // query parameters (those with empty values are left out).
  using Query = std::vector<std::pair<std::string, std::string>>;
  StatusOr<Json> Usage(const Query& query);
  StatusOr<Json> Audit(const Query& query);

  // Agents.
  StatusOr<DesiredState> Register(const NodeInfo& info);
  StatusOr<DesiredState> Sync(const std::string& node_id, const AgentReport& report,
                              uint64_t wait_version, Duration wait);
  // Returns the size the master now holds (and its log limit); on an offset mismatch,
  // kFailedPrecondition with the master's size in `*resume_at`.
  StatusOr<LogUploadResult> ShipLog(const std::string& node_id, const TaskId& task,
                                    const LogUpload& upload, int64_t* resume_at);

  // Makes the call in progress on another thread fail at once (HttpClient::Cancel). Thread-safe.
  void Cancel() { http_->Cancel(); }

  const std::string& master_url() const { return http_->base_url(); }

 private:
  explicit CohortClient(std::unique_ptr<HttpClient> http) : http_(std::move(http)) {}
  StatusOr<Json> Call(std::string_view method, std::string_view target, std::string_view body = {},
                      std::string_view content_type = "application/json",
                      Duration timeout = std::chrono::seconds(30),
                      std::vector<std::pair<std::string, std::string>> headers = {});

  std::unique_ptr<HttpClient> http_;
  std::string user_;
};

// Turns an API error document into a Status (exposed for tests).
Status StatusFromErrorBody(int http_status, std::string_view body);

}  // namespace cohort::client
