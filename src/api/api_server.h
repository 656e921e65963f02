// Cohort's HTTP/JSON API, version 1 (docs/api.md): routes requests to the master, answers long
// polls when the master reports a change, and streams task logs.
//
// Runs entirely on the master's io_context thread, like the master itself.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/change_stream.h"
#include "api/failure_limiter.h"
#include "api/http_server.h"
#include "api/log_stream.h"
#include "api/request_metrics.h"
#include "api/router.h"
#include "api/wait_list.h"
#include "auth/principal.h"
#include "common/subscribers.h"
#include "master/master.h"
#include "model/json.h"

namespace cohort::api {

// The one place where a Status becomes an HTTP status (the router adds 405 for a wrong method).
int HttpStatusFor(StatusCode code);
// {"error": {"code": "not_found", "message": "...", "details": [...]}}
HttpResponse ErrorResponse(const Status& status);

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
  ApiServer(boost::asio::io_context& ioc, master::Master& master, HttpLimits limits = {});
  ~ApiServer() override;

  // HTTPS instead of plain HTTP (HttpServer::UseTls); before Listen.
  void UseTls(std::shared_ptr<boost::asio::ssl::context> context) {
    http_.UseTls(std::move(context));
  }
  // Serves the dashboard's files from `dir` at / and /assets/ (api/web_routes.cc); without it,
  // those paths are 404s. Before Listen.
  void ServeWebFrom(std::string dir) { web_dir_ = std::move(dir); }
  Status Listen(const std::string& host, int port);
  int port() const { return http_.port(); }
  void Stop();

  void OnJobChanged(JobId id) override;
  void OnNodeChanged(const std::string& node_id) override;

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
  using Handler = void (ApiServer::*)(const Call&);
  static std::vector<Router<Handler, Access>::Route> Routes();

  // Who sent the request, from its Authorization header: anonymous without one; kUnauthenticated
  // for a malformed or invalid token.
  // Refused tokens count against the client's address; past FailureLimiter's budget, requests
  // with a token get kTooManyRequests without it being checked.
  StatusOr<auth::Principal> Authenticate(const HttpRequest& request);
  // OK if `caller` may use a route of `access` with these path parameters; else
  // kUnauthenticated (no token) or kPermissionDenied.
  static Status CheckAccess(Access access, const auth::Principal& caller, const PathParams& params);
  // The job as `caller` may see it: whole, or without its spec's commands and environment.
  static Json JobJsonFor(const auth::Principal& caller, const Job& job);
  // Answers 403 and returns false unless `caller` may read the whole job.
  bool CheckCanRead(const Call& call, const Job& job);

  // The route's {id}; answers 400 and returns nothing if it is not a job id.
  std::optional<JobId> JobIdParam(const Call& call);
  // The route's job, if the caller may read it; otherwise answers (400, 404 or 403) and returns
  // nullptr. Routes that show a job's contents (events, explain, metrics, usage) start here.
  const Job* ReadableJob(const Call& call);

  // One handler per route (docs/api.md).
  void Health(const Call& call);
  void SubmitJob(const Call& call);
  void ListJobs(const Call& call);
  void GetJob(const Call& call);
  void KillJob(const Call& call);
  void JobEvents(const Call& call);
  void ExplainJob(const Call& call);
  void StreamLogs(const Call& call);
  void ListTeams(const Call& call);
  void GetTeam(const Call& call);
  void SetTeam(const Call& call);
  void DeleteTeam(const Call& call);
  void ListNodes(const Call& call);
  void DrainNode(const Call& call);
  void UndrainNode(const Call& call);
  void RemoveNode(const Call& call);
  void RegisterAgent(const Call& call);
  void SyncAgent(const Call& call);
  void UploadLog(const Call& call);
  void UploadMetrics(const Call& call);  // api/metric_routes.cc
  void StreamChanges(const Call& call);
  void JobMetrics(const Call& call);  // api/metric_routes.cc
  void JobUsage(const Call& call);    // api/job_usage_route.cc
  // Users, teams' members, tokens (account_routes.cc).
  void WhoAmI(const Call& call);
  void ListUsers(const Call& call);
  void CreateUser(const Call& call);
  void GetUser(const Call& call);
  void UpdateUser(const Call& call);
  void DeleteUser(const Call& call);
  void ListMembers(const Call& call);
  void SetMember(const Call& call);
  void RemoveMember(const Call& call);
  void ListTokens(const Call& call);
  void CreateToken(const Call& call);
  void RevokeToken(const Call& call);
  void Usage(const Call& call);     // api/accounting_routes.cc
  void AuditLog(const Call& call);  // api/accounting_routes.cc
  void Metrics(const Call& call);   // api/metrics_route.cc
  // The dashboard (api/web_routes.cc): its page, its other files, and what both do.
  void WebPage(const Call& call);
  void WebAsset(const Call& call);
  void ServeWeb(const Call& call, std::string_view name);

  // Begins the audit entry of a state-changing call and returns the responder that completes it
  // with the answer; if the entry cannot be written, answers the error itself and returns null:
  // the call must not run (api/audit_hook.h).
  std::shared_ptr<Responder> StartAudit(const HttpRequest& request, const PathParams& params,
                                        std::string who, std::shared_ptr<Responder> responder);
  // Who an audit entry names: the user, "node:NAME", "(join token)", "(anonymous)" or
  // "(refused token)".
  static std::string AuditName(const StatusOr<auth::Principal>& caller);
  // Environment secrets (secret_routes.cc).
  void ListSecrets(const Call& call);
  void SetSecret(const Call& call);
  void DeleteSecret(const Call& call);

  // Answer a long poll with the job, or with what the node should run.
  void AnswerJob(JobId id, Responder& responder);
  void AnswerNode(const std::string& node_id, Responder& responder);

  boost::asio::io_context& ioc_;
  master::Master& master_;
  HttpServer http_;
  Router<Handler, Access> router_;
  WaitList<JobId> job_waiters_;         // GET /jobs/{id}?wait_version=
  ChangeStreams change_streams_;        // GET /events
  WaitList<std::string> node_waiters_;  // agents' syncs, by node
  Subscribers<JobId> job_changes_;      // log streams following a job
  FollowerCount followers_{kMaxFollowersPerJob};
  FailureLimiter failures_;
  // Every answer's latency, for GET /metrics; shared with the responders of calls under way,
  // which may answer after the server is gone.
  std::shared_ptr<RequestMetrics> request_metrics_ = std::make_shared<RequestMetrics>();
  std::string web_dir_;  // empty: no dashboard
  bool stopped_ = false;
};

}  // namespace cohort::api
