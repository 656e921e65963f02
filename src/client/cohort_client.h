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
#include "model/metric.h"
#include "model/node.h"

namespace cohort::client {

inline constexpr const char* kDefaultMasterUrl = "http://127.0.0.1:7420";

// 32 random hex digits: a name for one submission.
std::string NewRequestId();

// One page of GET /api/v1/jobs: its jobs, and the cursor of the next page (nothing: the last).
struct JobListPage {
  std::vector<Job> jobs;
  std::optional<JobId> next;
};

class CohortClient {
 public:
  // `token`: sent as "Authorization: Bearer <token>" with every call; empty: none (only the
  // health check answers then). `tls`: how an https:// master's certificate is verified
  // (HttpClient::Create).
  static StatusOr<std::unique_ptr<CohortClient>> Create(std::string_view master_url,
                                                        std::string token = {},
                                                        const TlsOptions& tls = {});
  // From now on, calls carry this token (an agent swaps the join token for its credential).
  void SetToken(const std::string& token);

  // OK once the master answers its health check (which takes no token).
  Status Health();
  // Who the token belongs to (GET /api/v1/whoami): name, admin, teams.
  StatusOr<Json> WhoAmI();

  // Users, team members and tokens (docs/api.md): the raw documents.
  StatusOr<Json> Users();
  StatusOr<Json> User(const std::string& name);
  StatusOr<Json> CreateUser(const Json& user);
  StatusOr<Json> UpdateUser(const std::string& name, const Json& change);
  Status DeleteUser(const std::string& name);
  StatusOr<Json> Members(const std::string& team);
  StatusOr<Json> SetMember(const std::string& team, const std::string& user,
                           const std::string& role);
  StatusOr<Json> RemoveMember(const std::string& team, const std::string& user);
  StatusOr<Json> Tokens(const std::string& user = {});
  // The new token's document, with its secret in "token" (shown once).
  StatusOr<Json> CreateToken(const Json& request);
  // A one-time dashboard sign-in code for the caller: {code, expires_at, user, url}.
  StatusOr<Json> CreateSignInCode();
  StatusOr<Json> RevokeToken(const std::string& id);

  // Environment secrets (docs/api.md, "Secrets"): the caller's own, or `team`'s when it is
  // not empty. Answers name secrets and never hold a value.
  StatusOr<Json> Secrets();
  StatusOr<Json> SetSecret(const std::string& name, const std::string& value,
                           const std::string& team = {});
  StatusOr<Json> DeleteSecret(const std::string& name, const std::string& team = {});

  // Jobs. `spec_text` is YAML or JSON; the master validates it. `request_id` names the
  // submission (Idempotency-Key): when the master cannot be reached or does not answer in time,
  // the call tries again with it, and a master that did create the job returns that job instead
  // of a second one. Empty: a new random id (NewRequestId).
  StatusOr<Job> Submit(std::string_view spec_text, std::string request_id = {});
  // The jobs list is paged (docs/api.md, "List"): one call answers at most kMaxJobPage jobs,
  // with the cursor of the next page. `query` is the list's query string ("limit=50&before=").
  StatusOr<JobListPage> ListJobPage(const std::string& query);
  // Every job (in `state`, if given), oldest first, a page at a time through the `after` cursor:
  // `on_page` gets each page as it arrives (`next` set: more follow); an error it returns ends
  // the walk and is returned.
  Status EachJobPage(std::optional<JobState> state,
                     const std::function<Status(JobListPage)>& on_page);
  // The most recent `limit` jobs (0: every job), in submission order, read a page at a time.
  StatusOr<std::vector<Job>> ListJobs(std::optional<JobState> state = std::nullopt,
                                      size_t limit = 0);
  StatusOr<Job> GetJob(JobId id);
  // Returns once the job's version exceeds `version`, or after `timeout` with the job as it is.
  StatusOr<Job> WaitJob(JobId id, uint64_t version, Duration timeout);
  StatusOr<Job> Kill(JobId id);
  // Attaches to the terminal of shell session `id` (GET /api/v1/jobs/{id}/terminal, switched to
  // the cohort-terminal protocol: terminal/terminal_frame.h), for a terminal of `cols` x `rows`
  // of type `term` (may be empty). The connection holds this client's until it is destroyed.
  StatusOr<std::unique_ptr<UpgradedConnection>> AttachTerminal(JobId id, int cols, int rows,
                                                               const std::string& term);
  // An array's jobs (GET /api/v1/arrays/{id}), and killing them all.
  // A one-time link that lets a browser into notebook `id` ({job, path, url, expires_at}), and
  // its Jupyter's /api/status through the master (kUnavailable until Jupyter answers).
  StatusOr<Json> NotebookLink(JobId id);
  StatusOr<Json> NotebookStatus(JobId id);
  StatusOr<Json> GetArray(JobId id);
  StatusOr<Json> KillArray(JobId id);
  // Every event of the job, read a page at a time.
  StatusOr<std::vector<JobEvent>> Events(JobId id);
  // The raw explanation document (GET /api/v1/jobs/{id}/explain).
  StatusOr<Json> Explain(JobId id);

  // Sweeps (docs/sweeps.md): the spec's text (JSON or YAML) in, the sweep's document out.
  StatusOr<Json> SubmitSweep(std::string_view spec_text);
  StatusOr<Json> Sweeps();
  StatusOr<Json> Sweep(int64_t id);
  // `action`: kill, pause or resume.
  StatusOr<Json> SweepAction(int64_t id, std::string_view action);
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
  // A page of a job's outputs in the store ({"job", "artifacts", "files", "more"}), after the
  // path `after` (empty: from the first).
  StatusOr<Json> Artifacts(JobId id, const std::string& after, size_t limit);
  // At most `length` bytes (the master answers at most 8 MiB) of the job's output `path` from
  // byte `offset`; fewer at its end, none past it.
  StatusOr<std::string> ArtifactRange(JobId id, const std::string& path, int64_t offset,
                                      int64_t length);
  // Datasets (docs/api.md, "Datasets"). Of these hashes (at most 1000), those the store lacks.
  StatusOr<std::vector<std::string>> MissingBlobs(const std::vector<std::string>& sha256);
  // Uploads one chunk (at most 8 MiB) under its hash: {"sha256", "size", "stored"}.
  StatusOr<Json> PutBlob(const std::string& sha256, std::string_view bytes);
  // Commits the next version of `name` ({"files", "public"}) in `team` (empty: the caller's):
  // {"name", "version", "team", ...}.
  // POST /api/v1/contexts: a job's code over chunks already uploaded; {context, file_count,
  // bytes}.
  StatusOr<Json> CommitContext(const Json& files);
  StatusOr<Json> CommitDataset(const std::string& name, const std::string& team,
                               const Json& request);
  // The raw answers of GET /api/v1/datasets (with these query parameters), of one dataset's
  // versions and of one version (with its files when `files`); `team` empty: the caller's.
  StatusOr<Json> Datasets(const Query& query);
  StatusOr<Json> Dataset(const std::string& name, const std::string& team);
  StatusOr<Json> DatasetVersion(const std::string& name, int64_t version, const std::string& team,
                                bool files);
  StatusOr<Json> DeleteDatasetVersion(const std::string& name, int64_t version,
                                      const std::string& team);
  // GET /api/v1/jobs/{id}/metrics: the job's series, or with "tag" one tag's chart lines.
  StatusOr<Json> JobMetrics(JobId id, const Query& query);
  StatusOr<Json> Audit(const Query& query);

  // Agents. With the join token, the answer carries the node's new credential, put in
  // `*credential` (left alone otherwise).
  StatusOr<DesiredState> Register(const NodeInfo& info, std::string* credential = nullptr);
  StatusOr<DesiredState> Sync(const std::string& node_id, const AgentReport& report,
                              uint64_t wait_version, Duration wait);
  // Returns the size the master now holds (and its log limit); on an offset mismatch,
  // kFailedPrecondition with the master's size in `*resume_at`.
  StatusOr<LogUploadResult> ShipLog(const std::string& node_id, const TaskId& task,
                                    const LogUpload& upload, int64_t* resume_at);

  // Sends a batch of a task's metric points (at most kMaxMetricBatchPoints, finite values).
  StatusOr<MetricUploadResult> ShipMetrics(const std::string& node_id, const TaskId& task,
                                           const std::vector<TaggedPoint>& points);

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
};

// Turns an API error document into a Status (exposed for tests).
Status StatusFromErrorBody(int http_status, std::string_view body);

}  // namespace cohort::client
