// Cohort's HTTP/JSON API, version 1 (docs/api.md): routes requests to the master, answers long
// polls when the master reports a change, and streams task logs.
//
// Runs entirely on the master's io_context thread, like the master itself.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "api/change_stream.h"
#include "api/failure_limiter.h"
#include "api/http_proxy.h"
#include "api/http_server.h"
#include "api/log_stream.h"
#include "api/request_metrics.h"
#include "api/router.h"
#include "api/store_reads.h"
#include "api/terminal_relay.h"
#include "api/wait_list.h"
#include "auth/principal.h"
#include "auth/sessions.h"
#include "auth/sign_in_codes.h"
#include "common/subscribers.h"
#include "master/master.h"
#include "model/json.h"

namespace cohort::store {
class DatasetCatalog;
}  // namespace cohort::store

namespace cohort::api {

// The one place where a Status becomes an HTTP status (the router adds 405 for a wrong method).
int HttpStatusFor(StatusCode code);
// {"error": {"code": "not_found", "message": "...", "details": [...]}}
HttpResponse ErrorResponse(const Status& status);
// Sends the response, or its error as ErrorResponse does: the API's one way to answer, whether
// a handler answers at once or a long poll or a thread answers later.
void SendAnswer(Responder& responder, StatusOr<HttpResponse> answer);

// What a request to a session's terminal asks to switch to (Upgrade: cohort-terminal).
inline constexpr std::string_view kTerminalProtocol = "cohort-terminal";

// The cookie that lets a browser into one notebook (api/notebook_routes.cc), and the query
// parameter of a link that sets it.
inline constexpr std::string_view kNotebookCookie = "cohort_notebook";
inline constexpr std::string_view kNotebookLinkParam = "cohort_link";
// The most body bytes a request to a notebook may carry (a notebook saved, a file uploaded), and
// the most its answer may (ProxyLimits).
inline constexpr uint64_t kNotebookBodyLimit = 16 * 1024 * 1024;

// Log streams that may follow one job at once.
inline constexpr int kMaxFollowersPerJob = 64;

// Who may call a route (docs/security.md, "The route matrix"); the handler may ask more, e.g.
// whether the caller owns the job.
enum class Access {
  kPublic,  // anyone, without a token
  kUser,    // any user's token
  kAdmin,   // a cluster admin's token
  kAgent,   // the credential of the node named in the path
  kJoin,    // the join token, or a node's own credential
};

class ApiServer final : public master::MasterListener {
 public:
  // GET /queue explains at most the first kMaxQueueExplained pending jobs the caller may read.
  static constexpr size_t kMaxQueueExplained = 100;
  // At most this many pending jobs in the answer (the first in the policy's order), as a page of
  // GET /jobs: `more` says how many were left out, so that 100,000 waiting jobs do not make one
  // answer of 100 MB.
  static constexpr size_t kMaxQueueListed = 1000;

  ApiServer(boost::asio::io_context& ioc, master::Master& master, HttpLimits limits = {});
  ~ApiServer() override;

  // HTTPS instead of plain HTTP (HttpServer::UseTls); before Listen.
  void UseTls(std::shared_ptr<boost::asio::ssl::context> context) {
    http_.UseTls(std::move(context));
    tls_ = true;
  }
  // Serves the dashboard's files from `dir` at / and /assets/ (api/web_routes.cc); without it,
  // those paths are 404s. Before Listen.
  void ServeWebFrom(std::string dir) { web_dir_ = std::move(dir); }
  // How long the dashboard's sign-in codes and sessions last, and how many there may be
  // (cohortd master --sign-in-code-ttl, --session-ttl); before Listen.
  void SetSignInLimits(auth::SignInCodeLimits codes, auth::SessionLimits sessions) {
    sign_in_codes_ = auth::SignInCodes(codes);
    sessions_ = auth::Sessions(sessions);
  }
  Status Listen(const std::string& host, int port);
  int port() const { return http_.port(); }
  void Stop();

  void OnJobChanged(JobId id) override;
  void OnNodeChanged(const std::string& node_id) override;
  // To every terminal attached to the session.
  void OnSessionNotice(JobId id, const std::string& text) override;
  // Closes the terminals and notebook sockets of session `id` once it has ended.
  void CloseEndedSession(JobId id);

  // Every route as (method, pattern): for the access matrix test, which must cover each.
  static std::vector<std::pair<std::string_view, std::string_view>> RouteList();

  // Answers one request, as the HTTP server does for each it reads; public so that a request
  // can be served without a socket (fuzz/api_fuzzer.cc).
  void Handle(HttpRequest request, std::shared_ptr<Responder> responder);

 private:
  // One request as its handler sees it.
  struct Call {
    const HttpRequest& request;
    const PathParams& params;  // the route's "{name}" segments
    std::shared_ptr<Responder> responder;
    const auth::Principal& caller;
  };
  // Most routes answer at once: the response, or an error for Handle to send. A route that
  // answers later (a long poll, a log or change stream, work done on another thread) keeps
  // call.responder and returns OK, or returns an error while it can still answer at once.
  using AnswersAtOnce = StatusOr<HttpResponse> (ApiServer::*)(const Call&);
  using AnswersLater = Status (ApiServer::*)(const Call&);
  using Handler = std::variant<AnswersAtOnce, AnswersLater>;
  static std::vector<Router<Handler, Access>::Route> Routes();

  // Who sent the request, from its Authorization header: anonymous without one; kUnauthenticated
  // for a malformed or invalid token.
  // Refused tokens count against the client's address; past FailureLimiter's budget, requests
  // with a token get kTooManyRequests without it being checked.
  StatusOr<auth::Principal> Authenticate(const HttpRequest& request);
  // The user of a dashboard session's secret, as their token would name them.
  StatusOr<auth::Principal> SessionCaller(std::string_view secret) const;
  // Counts a refused credential (a token, a session, a sign-in code) against the client's
  // address: `refusal`, or kTooManyRequests once the address has refused too many.
  Status CountRefusal(const HttpRequest& request, Status refusal);
  // OK if `caller` may use a route of `access` with these path parameters; else
  // kUnauthenticated (no token) or kPermissionDenied.
  static Status CheckAccess(Access access, const auth::Principal& caller, const PathParams& params);
  // The job as `caller` may see it: whole, or without its spec's commands and environment.
  static Json JobJsonFor(const auth::Principal& caller, const Job& job);
  // kPermissionDenied unless `caller` may read the whole job.
  static Status CheckCanRead(const auth::Principal& caller, const Job& job);
  // Runs the route's handler and sends what it answered at once.
  void Dispatch(const Handler& handler, const Call& call);

  // The route's {id}; kInvalidArgument if it is not a job id.
  static StatusOr<JobId> JobIdParam(const Call& call);
  Status AttachTerminal(const Call& call);
  // Notebooks (notebook_routes.cc, docs/runtimes.md "Notebooks"): a one-time link for the
  // owner; everything under the notebook's path, proxied to its Jupyter once the caller is let
  // in (by the link's cookie or the owner's token).
  StatusOr<HttpResponse> CreateNotebookLink(const Call& call);
  Status ServeNotebook(const Call& call);
  StatusOr<HttpResponse> OpenNotebookLink(const Call& call, const Job& job,
                                          const std::string& code);
  Status CheckNotebookCaller(const Call& call, const Job& job);
  // The latest notice of the session (master::MasterListener::OnSessionNotice) as its page's
  // banner asks for it.
  HttpResponse NotebookNotice(const Job& job) const;
  // The route's job, if the caller may read it; otherwise kInvalidArgument, kNotFound or
  // kPermissionDenied. Routes that show a job's contents (events, explain, logs, metrics, usage)
  // start here.
  StatusOr<const Job*> ReadableJob(const Call& call);

  // The team a job or sweep the caller submits goes to: the spec's (`team`, when `names_team`),
  // else the caller's own (auth::TeamForJobs), which `team` is set to, with a note for the
  // submission's event; kPermissionDenied when the caller may not submit there.
  StatusOr<std::string> TeamForSubmission(const Call& call, std::string& team, bool names_team);

  // One handler per route (docs/api.md).
  StatusOr<HttpResponse> Health(const Call& call);
  Status SubmitJob(const Call& call);
  StatusOr<HttpResponse> ListJobs(const Call& call);
  Status GetJob(const Call& call);
  StatusOr<HttpResponse> KillJob(const Call& call);
  // Arrays (array_routes.cc, docs/api.md "Arrays").
  StatusOr<HttpResponse> GetArray(const Call& call);
  StatusOr<HttpResponse> KillArray(const Call& call);
  // Sweeps (sweep_routes.cc, docs/sweeps.md).
  Status SubmitSweep(const Call& call);
  StatusOr<HttpResponse> ListSweeps(const Call& call);
  StatusOr<HttpResponse> GetSweep(const Call& call);
  StatusOr<HttpResponse> KillSweep(const Call& call);
  StatusOr<HttpResponse> PauseSweep(const Call& call);
  StatusOr<HttpResponse> ResumeSweep(const Call& call);
  // The route's sweep if the caller may change it (its owner, an admin of its team, an admin).
  StatusOr<SweepId> ChangeableSweep(const Call& call, const char* verb);
  StatusOr<HttpResponse> JobEvents(const Call& call);
  StatusOr<HttpResponse> ExplainJob(const Call& call);
  // The dashboard's queue in one answer: the pending jobs in the policy's order, each with why it
  // waits (as ExplainJob says it, for the first kMaxQueueExplained the caller may read), and
  // every team's quota, use and borrowing.
  StatusOr<HttpResponse> Queue(const Call& call);
  Status StreamLogs(const Call& call);
  StatusOr<HttpResponse> ListTeams(const Call& call);
  StatusOr<HttpResponse> GetTeam(const Call& call);
  StatusOr<HttpResponse> SetTeam(const Call& call);
  StatusOr<HttpResponse> DeleteTeam(const Call& call);
  StatusOr<HttpResponse> ListNodes(const Call& call);
  StatusOr<HttpResponse> DrainNode(const Call& call);
  StatusOr<HttpResponse> UndrainNode(const Call& call);
  StatusOr<HttpResponse> RemoveNode(const Call& call);
  StatusOr<HttpResponse> RegisterAgent(const Call& call);
  Status SyncAgent(const Call& call);
  Status UploadLog(const Call& call);
  Status UploadMetrics(const Call& call);  // api/metric_routes.cc
  Status StreamChanges(const Call& call);
  StatusOr<HttpResponse> JobMetrics(const Call& call);  // api/metric_routes.cc
  StatusOr<HttpResponse> JobUsage(const Call& call);    // api/job_usage_route.cc
  // A job's outputs in the object store (api/artifact_routes.cc): a page of them, and one's
  // bytes, whole or a range.
  Status ListArtifacts(const Call& call);
  Status GetArtifact(const Call& call);
  // Datasets (api/dataset_routes.cc, docs/api.md "Datasets"): which chunks the store lacks, one
  // chunk's upload, a version's commit, lists, a version, its deletion.
  Status MissingBlobs(const Call& call);
  Status PutBlob(const Call& call);
  Status CommitDataset(const Call& call);
  Status ListDatasets(const Call& call);
  Status GetDataset(const Call& call);
  Status GetDatasetVersion(const Call& call);
  Status DeleteDatasetVersion(const Call& call);
  // A job's code (docs/data.md, "Code"): its manifest, over chunks already uploaded.
  Status CommitContext(const Call& call);
  // The team a dataset route's `team` query names, else the caller's own (auth::TeamForJobs).
  StatusOr<std::string> DatasetTeam(const Call& call);
  // Runs `read` on the store reader and answers the call with what it gives; 503 with
  // Retry-After when StoreReads::kMaxUnderWay reads are under way.
  Status ReadStore(const Call& call, StoreReads::Read read);
  // Pins each of `refs` to the version of a dataset that the caller may read (a ref without a
  // team is `team`'s, one without a version its latest), on the store worker; then, on the
  // loop, `then` with them, team and version set, or the first that cannot be pinned (404 for
  // one the caller may not read). An error only when the work cannot start (too much under
  // way); `then` is not called then.
  using Pinned = std::function<void(StatusOr<std::vector<DatasetRef>>)>;
  Status PinDatasets(const Call& call, std::vector<DatasetRef> refs, const std::string& team,
                     Pinned then);
  // Users, teams' members, tokens (account_routes.cc).
  StatusOr<HttpResponse> WhoAmI(const Call& call);
  StatusOr<HttpResponse> ListUsers(const Call& call);
  StatusOr<HttpResponse> CreateUser(const Call& call);
  StatusOr<HttpResponse> GetUser(const Call& call);
  StatusOr<HttpResponse> UpdateUser(const Call& call);
  StatusOr<HttpResponse> DeleteUser(const Call& call);
  StatusOr<HttpResponse> ListMembers(const Call& call);
  StatusOr<HttpResponse> SetMember(const Call& call);
  StatusOr<HttpResponse> RemoveMember(const Call& call);
  StatusOr<HttpResponse> ListTokens(const Call& call);
  StatusOr<HttpResponse> CreateToken(const Call& call);
  StatusOr<HttpResponse> RevokeToken(const Call& call);
  // The dashboard's sign-in (sign_in_routes.cc): a one-time code for the caller, the code
  // exchanged for a session, and the session signed out.
  StatusOr<HttpResponse> CreateSignInCode(const Call& call);
  StatusOr<HttpResponse> OpenSession(const Call& call);
  StatusOr<HttpResponse> CloseSession(const Call& call);
  Status Usage(const Call& call);                     // api/accounting_routes.cc
  StatusOr<HttpResponse> AuditLog(const Call& call);  // api/accounting_routes.cc
  StatusOr<HttpResponse> Metrics(const Call& call);   // api/metrics_route.cc
  // The dashboard (api/web_routes.cc): its page, its other files, and what both do.
  StatusOr<HttpResponse> WebPage(const Call& call);
  StatusOr<HttpResponse> WebAsset(const Call& call);
  StatusOr<HttpResponse> ServeWeb(const Call& call, std::string_view name);

  // Begins the audit entry of a state-changing call and returns the responder that completes it
  // with the answer; if the entry cannot be written, answers the error itself and returns null:
  // the call must not run (api/audit_hook.h).
  std::shared_ptr<Responder> StartAudit(const HttpRequest& request, const PathParams& params,
                                        std::string who, std::shared_ptr<Responder> responder);
  // Who an audit entry names: the user, "node:NAME", "(join token)", "(anonymous)" or
  // "(refused token)".
  static std::string AuditName(const StatusOr<auth::Principal>& caller);
  // Environment secrets (secret_routes.cc).
  StatusOr<HttpResponse> ListSecrets(const Call& call);
  StatusOr<HttpResponse> SetSecret(const Call& call);
  StatusOr<HttpResponse> DeleteSecret(const Call& call);

  // Answer a long poll with the job, or with what the node should run.
  void AnswerJob(JobId id, Responder& responder);
  void AnswerNode(const std::string& node_id, Responder& responder);

  boost::asio::io_context& ioc_;
  master::Master& master_;
  HttpServer http_;
  Router<Handler, Access> router_;
  WaitList<JobId> job_waiters_;   // GET /jobs/{id}?wait_version=
  ChangeStreams change_streams_;  // GET /events
  // The terminals attached to each session (GET /jobs/{id}/terminal), as many as connections.
  std::multimap<JobId, std::weak_ptr<TerminalRelay>> terminals_;
  // The WebSockets open to each notebook (its kernels' channels), closed when it ends.
  std::multimap<JobId, std::weak_ptr<ProxiedCall>> notebook_sockets_;
  // The newest notice of each running session (an idle or preemption warning, or its lifting),
  // for its notebook page's banner; forgotten when the session ends.
  struct SessionNotice {
    std::string text;
    Timestamp at;
  };
  std::map<JobId, SessionNotice> session_notices_;
  WaitList<std::string> node_waiters_;  // agents' syncs, by node
  Subscribers<JobId> job_changes_;      // log streams following a job
  FollowerCount followers_{kMaxFollowersPerJob};
  FailureLimiter failures_;
  // Every answer's latency, for GET /metrics; shared with the responders of calls under way,
  // which may answer after the server is gone.
  std::shared_ptr<RequestMetrics> request_metrics_ = std::make_shared<RequestMetrics>();
  std::string web_dir_;  // empty: no dashboard
  bool tls_ = false;     // the scheme of the sign-in links the API hands out
  auth::SignInCodes sign_in_codes_{auth::SignInCodeLimits{}};
  auth::Sessions sessions_{auth::SessionLimits{}};
  // A notebook link's code, and the pass (the cookie) it is exchanged for: each bound to one
  // notebook and its owner ("JOB/USER"), apart from the dashboard's, so neither opens anything
  // else.
  auth::SignInCodes notebook_codes_{auth::SignInCodeLimits{}};
  auth::Sessions notebook_passes_{auth::SessionLimits{}};
  bool stopped_ = false;
  // The one caller of master_.objects() (not thread-safe), off the event loop.
  std::unique_ptr<StoreReads> store_reads_;
  // The datasets in the store: used on the store reader's thread only.
  std::shared_ptr<store::DatasetCatalog> datasets_;
};

}  // namespace cohort::api
