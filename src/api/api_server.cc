#include "api/api_server.h"
#include "api/request_params.h"
#include "model/metric.h"

#include <fmt/format.h>

#include <spdlog/spdlog.h>
#include <boost/algorithm/string/predicate.hpp>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <limits>
#include <regex>
#include <set>

#include "api/audit_hook.h"
#include "api/desired_state_text.h"
#include "api/job_pages.h"
#include "api/log_stream.h"
#include "api/resource_json.h"
#include "api/router.h"
#include "api/terminal_relay.h"
#include "auth/token.h"
#include "common/strings.h"
#include "model/dataset.h"
#include "model/job_spec_parser.h"
#include "model/json.h"
#include "model/limits.h"
#include "model/node_validation.h"
#include "model/secret.h"
#include "store/dataset_catalog.h"
#include "store/dataset_layout.h"

namespace cohort::api {
namespace {

namespace net = boost::asio;

constexpr int64_t kMaxWaitMs = 60'000;

HttpResponse DesiredStateResponse(const DesiredState& desired) {
  return HttpResponse{200, "application/json", DesiredStateText(desired)};
}

// Request bodies beyond what each route needs (docs/api.md, "Limits"); every other route takes
// kSmallBodyLimit. A registration of 64 GPUs, every pair linked, is about 200 KiB; a sync
// report is about 230 bytes a task (some 4,500 tasks here, read in about 25 ms), and 80 more
// for each resource sample it carries (one or two per task and GPU, at most 12 while the
// master was away: some 900 tasks then); a log upload is one chunk of the agent's.
constexpr uint64_t kRegistrationBodyLimit = 512 * 1024;
constexpr uint64_t kSyncBodyLimit = 1024 * 1024;
constexpr uint64_t kLogUploadBodyLimit = 2 * kMaxLogUploadBytes;
// A full batch of points with 256-byte tags, as JSON.
constexpr uint64_t kMetricBatchBodyLimit = kMaxMetricBatchPoints * 400;
// A secret's value, each byte escaped as JSON may write it (\u00XX), and the rest of the body.
constexpr uint64_t kSecretBodyLimit = 6 * kMaxSecretValueBytes + 1024;
// POST /blobs/missing: 1000 hashes of 64 digits, quoted, with commas and spaces.
constexpr uint64_t kBlobsAskedBodyLimit = 1000 * 72 + 1024;
// POST /contexts: the most files a job's code holds, each with a long path and its hashes.
constexpr uint64_t kContextBodyLimit = store::kMaxContextFiles * 512;

// Answers quote what the client sent (a path, a query value), which need not be UTF-8; JSON
// cannot carry that, and dump() would throw. Such bytes are shown as U+FFFD instead.
std::string Dump(const Json& body) {
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json NodeJson(const master::NodeStatus& status, const master::ResourceHistory& resources) {
  Json j = ToJson(status.node->info);
  j["state"] = NodeStateName(status.node->state);
  j["drained"] = status.node->drained;
  j["drain_reason"] = status.node->drain_reason;
  j["registered_at"] = FormatTimestamp(status.node->registered_at);
  j["last_seen"] = FormatTimestamp(status.node->last_seen);
  j["allocated"] = Json{{"gpus", status.allocated.gpus},
                        {"cpus", static_cast<double>(status.allocated.milli_cpus) / 1000.0},
                        {"memory_bytes", status.allocated.memory_bytes}};
  for (auto& gpu : j["gpus"]) {
    AddLatestGpuLoad(gpu, resources.LatestGpu(status.node->info.id, gpu["index"].get<int>()));
    auto it = status.gpu_holders.find(gpu["index"].get<int>());
    if (it == status.gpu_holders.end()) {
      gpu["job_id"] = nullptr;
      gpu["task"] = nullptr;
    } else {
      gpu["job_id"] = it->second.job_id;
      gpu["task"] = it->second.task;
    }
  }
  return j;
}

Json TeamJson(const master::TeamStatus& t) {
  return Json{{"name", t.quota.name},
              {"guaranteed_gpus", t.quota.guaranteed_gpus},
              {"max_gpus", t.quota.max_gpus ? Json(*t.quota.max_gpus) : Json(nullptr)},
              {"implicit", t.implicit},
              {"used_gpus", t.held.gpus},
              {"borrowed_gpus", t.BorrowedGpus()},
              {"used_cpus", static_cast<double>(t.held.milli_cpus) / 1000.0},
              {"used_memory_bytes", t.held.memory_bytes},
              {"running_jobs", t.running_jobs},
              {"pending_jobs", t.pending_jobs}};
}

// What the master serves while read-only: reads, agents' syncs (heard, not applied), and
// notebooks (what they write goes to their node, not to the master).
bool ServedWhileReadOnly(std::string_view method, std::string_view route) {
  return method == "GET" || method == "HEAD" ||
         (method == "POST" && route == "/api/v1/agents/{node}/sync") ||
         route == "/api/v1/jobs/{id}/notebook/{path...}";
}

}  // namespace

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kDeadlineExceeded:
      return 504;
    case StatusCode::kInternal:
      return 500;
    case StatusCode::kResourceExhausted:
      return 507;  // Insufficient Storage: the request was fine, the master's disk is not
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kTooManyRequests:
      return 429;
  }
  return 500;
}

HttpResponse ErrorResponse(const Status& status) {
  Json error{{"code", StatusCodeName(status.code())}, {"message", status.message()}};
  if (!status.details().empty()) error["details"] = status.details();
  return JsonResponse(HttpStatusFor(status.code()), Json{{"error", error}});
}

void SendAnswer(Responder& responder, StatusOr<HttpResponse> answer) {
  if (!answer.ok()) return responder.Send(ErrorResponse(answer.status()));
  responder.Send(std::move(answer).value());
}

// The API, one line per route (docs/api.md). A path that matches no pattern is a 404; a path
// that matches with another method is a 405 naming the methods it allows.
std::vector<Router<ApiServer::Handler, Access>::Route> ApiServer::Routes() {
  using A = Access;
  return {
      {"GET", "/api/v1/health", &ApiServer::Health, A::kPublic},
      {"GET", "/api/v1/whoami", &ApiServer::WhoAmI, A::kUser},
      {"POST", "/api/v1/auth/signin-codes", &ApiServer::CreateSignInCode, A::kUser},
      // Public: the code in the body is the credential (sign_in_routes.cc).
      {"POST", "/api/v1/auth/sessions", &ApiServer::OpenSession, A::kPublic},
      {"DELETE", "/api/v1/auth/sessions/current", &ApiServer::CloseSession, A::kUser},
      {"POST", "/api/v1/jobs", &ApiServer::SubmitJob, A::kUser, kMaxSpecBytes},
      {"GET", "/api/v1/jobs", &ApiServer::ListJobs, A::kUser},
      {"GET", "/api/v1/jobs/{id}", &ApiServer::GetJob, A::kUser},
      {"POST", "/api/v1/jobs/{id}/kill", &ApiServer::KillJob, A::kUser},
      {"GET", "/api/v1/jobs/{id}/terminal", &ApiServer::AttachTerminal, A::kUser},
      {"POST", "/api/v1/jobs/{id}/notebook-link", &ApiServer::CreateNotebookLink, A::kUser},
      // Public: the notebook's cookie, or its owner's token, is checked by the handler.
      {"GET", "/api/v1/jobs/{id}/notebook", &ApiServer::ServeNotebook, A::kPublic},
      {"GET", "/api/v1/jobs/{id}/notebook/{path...}", &ApiServer::ServeNotebook, A::kPublic},
      {"POST", "/api/v1/jobs/{id}/notebook/{path...}", &ApiServer::ServeNotebook, A::kPublic,
       kNotebookBodyLimit},
      {"PUT", "/api/v1/jobs/{id}/notebook/{path...}", &ApiServer::ServeNotebook, A::kPublic,
       kNotebookBodyLimit},
      {"PATCH", "/api/v1/jobs/{id}/notebook/{path...}", &ApiServer::ServeNotebook, A::kPublic,
       kNotebookBodyLimit},
      {"DELETE", "/api/v1/jobs/{id}/notebook/{path...}", &ApiServer::ServeNotebook, A::kPublic},
      {"GET", "/api/v1/arrays/{id}", &ApiServer::GetArray, A::kUser},
      {"POST", "/api/v1/arrays/{id}/kill", &ApiServer::KillArray, A::kUser},
      {"POST", "/api/v1/sweeps", &ApiServer::SubmitSweep, A::kUser, kMaxSpecBytes},
      {"GET", "/api/v1/sweeps", &ApiServer::ListSweeps, A::kUser},
      {"GET", "/api/v1/sweeps/{id}", &ApiServer::GetSweep, A::kUser},
      {"POST", "/api/v1/sweeps/{id}/kill", &ApiServer::KillSweep, A::kUser},
      {"POST", "/api/v1/sweeps/{id}/pause", &ApiServer::PauseSweep, A::kUser},
      {"POST", "/api/v1/sweeps/{id}/resume", &ApiServer::ResumeSweep, A::kUser},
      {"GET", "/api/v1/jobs/{id}/events", &ApiServer::JobEvents, A::kUser},
      {"GET", "/api/v1/jobs/{id}/explain", &ApiServer::ExplainJob, A::kUser},
      {"GET", "/api/v1/queue", &ApiServer::Queue, A::kUser},
      {"GET", "/api/v1/jobs/{id}/logs", &ApiServer::StreamLogs, A::kUser},
      {"GET", "/api/v1/jobs/{id}/metrics", &ApiServer::JobMetrics, A::kUser},
      {"GET", "/api/v1/events", &ApiServer::StreamChanges, A::kUser},
      {"GET", "/api/v1/jobs/{id}/usage", &ApiServer::JobUsage, A::kUser},
      {"GET", "/api/v1/jobs/{id}/artifacts", &ApiServer::ListArtifacts, A::kUser},
      {"GET", "/api/v1/jobs/{id}/artifacts/{path...}", &ApiServer::GetArtifact, A::kUser},
      {"POST", "/api/v1/blobs/missing", &ApiServer::MissingBlobs, A::kUser, kBlobsAskedBodyLimit},
      {"PUT", "/api/v1/blobs/{sha256}", &ApiServer::PutBlob, A::kUser, kMaxDatasetChunkBytes},
      {"GET", "/api/v1/datasets", &ApiServer::ListDatasets, A::kUser},
      {"GET", "/api/v1/datasets/{name}", &ApiServer::GetDataset, A::kUser},
      {"POST", "/api/v1/datasets/{name}/versions", &ApiServer::CommitDataset, A::kUser,
       kMaxDatasetManifestBytes},
      {"GET", "/api/v1/datasets/{name}/versions/{version}", &ApiServer::GetDatasetVersion,
       A::kUser},
      {"DELETE", "/api/v1/datasets/{name}/versions/{version}", &ApiServer::DeleteDatasetVersion,
       A::kUser},
      {"POST", "/api/v1/contexts", &ApiServer::CommitContext, A::kUser, kContextBodyLimit},
      {"GET", "/api/v1/teams", &ApiServer::ListTeams, A::kUser},
      {"GET", "/api/v1/teams/{name}", &ApiServer::GetTeam, A::kUser},
      {"PUT", "/api/v1/teams/{name}", &ApiServer::SetTeam, A::kAdmin},
      {"DELETE", "/api/v1/teams/{name}", &ApiServer::DeleteTeam, A::kAdmin},
      {"GET", "/api/v1/teams/{name}/members", &ApiServer::ListMembers, A::kUser},
      {"PUT", "/api/v1/teams/{name}/members/{user}", &ApiServer::SetMember, A::kUser},
      {"DELETE", "/api/v1/teams/{name}/members/{user}", &ApiServer::RemoveMember, A::kUser},
      {"GET", "/api/v1/users", &ApiServer::ListUsers, A::kAdmin},
      {"POST", "/api/v1/users", &ApiServer::CreateUser, A::kAdmin},
      {"GET", "/api/v1/users/{name}", &ApiServer::GetUser, A::kUser},
      {"PATCH", "/api/v1/users/{name}", &ApiServer::UpdateUser, A::kAdmin},
      {"DELETE", "/api/v1/users/{name}", &ApiServer::DeleteUser, A::kAdmin},
      {"GET", "/api/v1/tokens", &ApiServer::ListTokens, A::kUser},
      {"POST", "/api/v1/tokens", &ApiServer::CreateToken, A::kUser},
      {"DELETE", "/api/v1/tokens/{id}", &ApiServer::RevokeToken, A::kUser},
      {"GET", "/api/v1/secrets", &ApiServer::ListSecrets, A::kUser},
      {"PUT", "/api/v1/secrets/{name}", &ApiServer::SetSecret, A::kUser, kSecretBodyLimit},
      {"DELETE", "/api/v1/secrets/{name}", &ApiServer::DeleteSecret, A::kUser},
      {"GET", "/api/v1/nodes", &ApiServer::ListNodes, A::kUser},
      {"POST", "/api/v1/nodes/{node}/drain", &ApiServer::DrainNode, A::kAdmin},
      {"POST", "/api/v1/nodes/{node}/undrain", &ApiServer::UndrainNode, A::kAdmin},
      {"DELETE", "/api/v1/nodes/{node}", &ApiServer::RemoveNode, A::kAdmin},
      {"POST", "/api/v1/agents/register", &ApiServer::RegisterAgent, A::kJoin,
       kRegistrationBodyLimit},
      {"POST", "/api/v1/agents/{node}/sync", &ApiServer::SyncAgent, A::kAgent, kSyncBodyLimit},
      {"POST", "/api/v1/agents/{node}/logs/{task}", &ApiServer::UploadLog, A::kAgent,
       kLogUploadBodyLimit},
      {"POST", "/api/v1/agents/{node}/metrics/{task}", &ApiServer::UploadMetrics, A::kAgent,
       kMetricBatchBodyLimit},
      {"GET", "/api/v1/usage", &ApiServer::Usage, A::kUser},
      {"GET", "/api/v1/audit", &ApiServer::AuditLog, A::kAdmin},
      // Where Prometheus looks by default, outside /api/v1: not part of the JSON API.
      {"GET", "/metrics", &ApiServer::Metrics, A::kUser},
      // The dashboard: its page and its files hold no data, so no token is needed to load them.
      {"GET", "/", &ApiServer::WebPage, A::kPublic},
      {"GET", "/assets/{file}", &ApiServer::WebAsset, A::kPublic},
  };
}

std::vector<std::pair<std::string_view, std::string_view>> ApiServer::RouteList() {
  std::vector<std::pair<std::string_view, std::string_view>> list;
  for (const auto& route : Routes()) list.emplace_back(route.method, route.pattern);
  return list;
}

ApiServer::ApiServer(net::io_context& ioc, master::Master& master, HttpLimits limits)
    : ioc_(ioc),
      master_(master),
      http_(
          ioc, [this](HttpRequest r, std::shared_ptr<Responder> w) { Handle(std::move(r), w); },
          [this](std::string_view method, std::string_view path) {
            return router_.Find(method, path).body_limit;
          },
          limits),
      router_(Routes()),
      job_waiters_(ioc, [this](JobId id, Responder& r) { AnswerJob(id, r); }),
      change_streams_(ioc),
      node_waiters_(ioc, [this](const std::string& id, Responder& r) { AnswerNode(id, r); }),
      store_reads_(std::make_unique<StoreReads>(
          master.objects(),
          [this](std::function<void()> work) { net::post(ioc_, std::move(work)); })),
      datasets_(std::make_shared<store::DatasetCatalog>(master.objects())) {
  master_.SetListener(this);
  // Log uploads are written on a thread of the log store's own: the event loop never waits for
  // the disk on their account. Their answers come back here.
  master_.logs().StartWriter(
      [this](std::function<void()> work) { net::post(ioc_, std::move(work)); });
  master_.metrics().StartWriter(
      [this](std::function<void()> work) { net::post(ioc_, std::move(work)); });
}

ApiServer::~ApiServer() {
  Stop();
  master_.logs().StopWriter();
  master_.SetListener(nullptr);
}

Status ApiServer::Listen(const std::string& host, int port) { return http_.Listen(host, port); }

void ApiServer::Stop() {
  stopped_ = true;
  http_.Stop();
  job_waiters_.CancelAll();
  node_waiters_.CancelAll();
  change_streams_.CloseAll();
  store_reads_->Stop();
}

Status ApiServer::StreamChanges(const Call& call) {
  COHORT_RETURN_IF_ERROR(CheckQuery(call.request, {}));
  change_streams_.Open(call.responder);
  return Status::Ok();
}

// Wake-ups of waiters are posted, not run inline: the change that triggers them is still being
// made (and written to the store) when the master calls the listener.
void ApiServer::OnJobChanged(JobId id) {
  // Log streams only schedule a step when woken, so they may be told at once.
  job_changes_.Notify(id);
  change_streams_.JobChanged(id);
  if (terminals_.count(id) > 0 || notebook_sockets_.count(id) > 0 ||
      session_notices_.count(id) > 0) {
    net::post(ioc_, [this, id] { CloseEndedSession(id); });
  }
  if (!job_waiters_.Has(id)) return;
  net::post(ioc_, [this, id] {
    auto job = master_.GetJob(id);
    if (job.ok()) job_waiters_.Wake(id, (*job)->version);
  });
}

void ApiServer::OnNodeChanged(const std::string& node_id) {
  change_streams_.NodeChanged(node_id);
  if (!node_waiters_.Has(node_id)) return;
  net::post(ioc_, [this, node_id] {
    // The version alone: building the node's whole desired state here doubled what each
    // change cost (it is built again for each waiter answered).
    if (auto version = master_.nodes().VersionOf(node_id)) node_waiters_.Wake(node_id, *version);
  });
}

void ApiServer::AnswerJob(JobId id, Responder& responder) {
  auto job = master_.GetJob(id);
  SendAnswer(responder,
             job.ok() ? StatusOr<HttpResponse>(JsonResponse(200, ToJson(**job))) : job.status());
}

// The tasks to forget are not repeated: a sync that had any was answered at once.
void ApiServer::AnswerNode(const std::string& node_id, Responder& responder) {
  auto desired = master_.nodes().DesiredFor(node_id);
  SendAnswer(responder, desired.ok() ? StatusOr<HttpResponse>(DesiredStateResponse(*desired))
                                     : desired.status());
}

std::string ApiServer::AuditName(const StatusOr<auth::Principal>& caller) {
  if (!caller.ok()) return "(refused token)";
  switch (caller->kind) {
    case auth::CallerKind::kAnonymous:
      return "(anonymous)";
    case auth::CallerKind::kUser:
      return caller->name;
    case auth::CallerKind::kNode:
      return "node:" + caller->name;
    case auth::CallerKind::kJoin:
      return "(join token)";
  }
  return "?";
}

StatusOr<auth::Principal> ApiServer::Authenticate(const HttpRequest& request) {
  auto it = request.headers.find("authorization");
  if (it == request.headers.end()) return auth::Principal{};
  auto token = auth::BearerToken(it->second);
  StatusOr<auth::Principal> caller =
      !token.ok() ? StatusOr<auth::Principal>(Status::Unauthenticated(token.status().message()))
      : token->starts_with(auth::kSessionPrefix) ? SessionCaller(*token)
                                                 : master_.accounts().Authenticate(*token);
  // A valid token or node credential is served whatever its address did: an agent, or a user on
  // a GPU node, shares its address with tasks that may guess. Only refusals are slowed.
  if (caller.ok()) return caller;
  return CountRefusal(request, caller.status());
}

StatusOr<auth::Principal> ApiServer::SessionCaller(std::string_view secret) const {
  COHORT_ASSIGN_OR_RETURN(auth::Session session, sessions_.Authenticate(secret, master_.Now()));
  const User* user = master_.accounts().FindUser(session.user);
  if (!user) {
    return Status::Unauthenticated(fmt::format(
        "the dashboard session belongs to user {}, who no longer exists", session.user));
  }
  return auth::Principal::ForUser(*user, session.id);
}

Status ApiServer::CountRefusal(const HttpRequest& request, Status refusal) {
  std::string address = ClientAddress(request.remote);
  Timestamp now = master_.Now();
  Duration wait = failures_.Wait(address, now);
  if (wait == Duration::zero()) failures_.Failed(address, now);
  // In aggregate: a flood of guesses is a line every few seconds, not a line each.
  if (int64_t refused = failures_.Report(address, now); refused > 0) {
    spdlog::warn("refused {} token{} from {} since the last report (the last: {})", refused,
                 refused == 1 ? "" : "s", address, refusal.message());
  }
  if (wait > Duration::zero()) {
    return Status::TooManyRequests(fmt::format(
        "too many refused tokens from {}; try again in {} ms", address, ToMillis(wait) + 1));
  }
  return refusal;
}

Status ApiServer::CheckAccess(Access access, const auth::Principal& caller,
                              const PathParams& params) {
  if (access == Access::kPublic) return Status::Ok();
  if (caller.kind == auth::CallerKind::kAnonymous) {
    return Status::Unauthenticated(
        "this call needs a token: log in with `cohort login` (or send \"Authorization: Bearer "
        "<token>\"); an admin makes tokens with `cohort token create`");
  }
  auto denied = [&](std::string_view needs) {
    return Status::PermissionDenied(
        fmt::format("{} may not do this: {}", caller.Describe(), needs));
  };
  switch (access) {
    case Access::kPublic:
      return Status::Ok();
    case Access::kUser:
      return caller.is_user() ? Status::Ok() : denied("it takes a user's token");
    case Access::kAdmin:
      return auth::IsAdmin(caller) ? Status::Ok() : denied("only a cluster admin may");
    case Access::kAgent: {
      auto node = params.find("node");
      bool own = caller.kind == auth::CallerKind::kNode && node != params.end() &&
                 node->second == caller.name;
      return own ? Status::Ok() : denied("only that node's agent may, with its credential");
    }
    case Access::kJoin:
      return caller.kind == auth::CallerKind::kJoin || caller.kind == auth::CallerKind::kNode
                 ? Status::Ok()
                 : denied("agents register with the join token or their node's credential");
  }
  return denied("unknown access");
}

namespace {

// What the caller may do with the job, as the routes that do it decide: the dashboard shows
// these buttons and copies no rule of its own.
Json AllowedActions(const auth::Principal& caller, const Job& job, bool readable) {
  Json actions = Json::array();
  if (!IsTerminal(job.state) && auth::CanChangeJob(caller, job.user, job.spec.team)) {
    actions.push_back("kill");
  }
  if (readable && auth::CanSubmitTo(caller, job.spec.team)) actions.push_back("resubmit");
  return actions;
}

}  // namespace

Json ApiServer::JobJsonFor(const auth::Principal& caller, const Job& job) {
  if (auth::CanReadJob(caller, job.user, job.spec.team)) {
    Json j = ToJson(job);
    j["allowed_actions"] = AllowedActions(caller, job, true);
    return j;
  }
  // What the scheduler shows of everyone's jobs (who, which team, what resources, where, since
  // when), without what the job runs: commands, environment, working directory, request ids.
  Job shown = job;
  for (auto& group : shown.spec.tasks) {
    group.command = {"(hidden)"};
    group.env.clear();
    group.env_secrets.clear();
    group.workdir.clear();
  }
  shown.request_id.clear();
  shown.request_digest.clear();
  Json j = ToJson(shown);
  j["redacted"] = true;
  j["allowed_actions"] = AllowedActions(caller, job, false);
  return j;
}

Status ApiServer::CheckCanRead(const auth::Principal& caller, const Job& job) {
  if (auth::CanReadJob(caller, job.user, job.spec.team)) return Status::Ok();
  return Status::PermissionDenied(
      fmt::format("{} may not read job {}: its owner {}, members of team {} and admins may",
                  caller.Describe(), job.id, job.user, job.spec.team));
}

void ApiServer::Handle(HttpRequest request, std::shared_ptr<Responder> responder) {
  auto found = router_.Find(request.method, request.path);
  // Timed around everything below, the audit's writes included; labelled by the route's pattern,
  // never the raw path, so that clients cannot make new series (api/request_metrics.h).
  responder = std::make_shared<TimedResponder>(
      std::move(responder), [metrics = request_metrics_, &master = master_,
                             route = found.handler ? found.pattern : kUnmatchedRoute,
                             method = request.method, start = master_.Now()](int status) {
        metrics->Observe(route, method, status, master.Now() - start);
      });
  // Read-only (the state disk is short of space): what would write is refused before anything,
  // the audit entry included, is written. Reads are served, and so are agents' syncs: the master
  // hears them without applying their reports (Reconciler::Sync).
  if (const auto& read_only = master_.read_only();
      read_only && found.handler && !ServedWhileReadOnly(request.method, found.pattern)) {
    HttpResponse response = ErrorResponse(Status::Unavailable(*read_only));
    response.headers.emplace_back("Retry-After", "5");
    return responder->Send(std::move(response));
  }
  StatusOr<auth::Principal> caller = Authenticate(request);
  // Its connection is kept over strangers' when connections run short (api/connection_slots.h).
  if (caller.ok() && caller->kind != auth::CallerKind::kAnonymous) responder->MarkAuthenticated();
  // Every answer to a state-changing call, errors included, passes through its audit entry: a
  // call with a token, or with a refused one (the failure limiter bounds how many an address
  // makes). Calls with no token, and those held back by the limiter, write nothing: a stranger
  // cannot fill the audit log.
  const bool audited =
      IsAudited(request) && (caller.ok() ? caller->kind != auth::CallerKind::kAnonymous
                                         : caller.status().code() == StatusCode::kUnauthenticated);
  if (audited) {
    responder = StartAudit(request, found.params, AuditName(caller), std::move(responder));
    if (!responder) return;  // refused: the call could not be recorded
  }
  if (found.handler) {
    Status allowed =
        caller.ok() ? CheckAccess(found.access, *caller, found.params) : caller.status();
    if (!allowed.ok()) {
      HttpResponse response = ErrorResponse(allowed);
      if (allowed.code() == StatusCode::kTooManyRequests)
        response.headers.emplace_back("Retry-After", "1");
      if (allowed.code() == StatusCode::kUnauthenticated) {
        // RFC 6750: what a client without a valid token is expected to send.
        response.headers.emplace_back(
            "WWW-Authenticate", caller.ok() ? "Bearer realm=\"cohort\""
                                            : "Bearer realm=\"cohort\", error=\"invalid_token\"");
      }
      return responder->Send(std::move(response));
    }
    return Dispatch(*found.handler, Call{request, found.params, responder, *caller});
  }
  if (!found.allowed.empty()) {
    std::string allowed = Join({found.allowed.begin(), found.allowed.end()}, ", ");
    HttpResponse response = ErrorResponse(Status::InvalidArgument(fmt::format(
        "{} is not allowed on {}; it takes {}", request.method, request.path, allowed)));
    response.status = 405;
    response.headers.emplace_back("Allow", allowed);
    return responder->Send(std::move(response));
  }
  std::string_view path = request.path;
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  if (!path.starts_with("/api/v1/")) {
    return SendAnswer(*responder,
                      Status::NotFound(fmt::format(
                          "no such endpoint: {}; the API lives under /api/v1", request.path)));
  }
  SendAnswer(*responder, Status::NotFound(
                             fmt::format("no such endpoint: {} {}", request.method, request.path)));
}

void ApiServer::Dispatch(const Handler& handler, const Call& call) {
  if (const auto* answers_at_once = std::get_if<AnswersAtOnce>(&handler)) {
    return SendAnswer(*call.responder, (this->**answers_at_once)(call));
  }
  // OK: the handler has answered, or will; an error: nothing was sent yet.
  Status started = (this->*std::get<AnswersLater>(handler))(call);
  if (!started.ok()) SendAnswer(*call.responder, std::move(started));
}

StatusOr<JobId> ApiServer::JobIdParam(const Call& call) { return ParseJobId(call.params.at("id")); }

StatusOr<const Job*> ApiServer::ReadableJob(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(JobId id, JobIdParam(call));
  COHORT_ASSIGN_OR_RETURN(const Job* job, master_.GetJob(id));
  COHORT_RETURN_IF_ERROR(CheckCanRead(call.caller, *job));
  return job;
}

StatusOr<HttpResponse> ApiServer::Health(const Call& call) {
  // Read-only is not down: probes keep the master, and whoever looks learns why changes fail.
  if (const auto& read_only = master_.read_only()) {
    return JsonResponse(200, Json{{"status", "read_only"}, {"reason", *read_only}});
  }
  return JsonResponse(200, Json{{"status", "ok"}});
}

StatusOr<std::string> ApiServer::TeamForSubmission(const Call& call, std::string& team,
                                                   bool names_team) {
  std::string team_note;
  if (!names_team) {
    // The submitter's team, not the cluster's default team, which they may not be in.
    COHORT_ASSIGN_OR_RETURN(team, auth::TeamForJobs(call.caller, master::kDefaultTeam));
    team_note = fmt::format("team {}: the spec names none, and it is {}'s", team, call.caller.name);
  }
  // A team that does not exist is the master's to refuse (or to replace by the fallback team,
  // which the caller must then be in).
  std::string effective = team;
  if (!master_.teams().Exists(effective) && !master_.config().unknown_team_fallback.empty()) {
    effective = master_.config().unknown_team_fallback;
  }
  if (master_.teams().Exists(effective) && !auth::CanSubmitTo(call.caller, effective)) {
    return Status::PermissionDenied(fmt::format(
        "{} may not submit to team {}: only its members and admins may; ask an admin of the "
        "team to add you (cohort team add-member {} {})",
        call.caller.Describe(), effective, effective, call.caller.name));
  }
  return team_note;
}

Status ApiServer::SubmitJob(const Call& call) {
  const HttpRequest& request = call.request;
  // A client that retries a submission whose answer it never got sends the same key again, and
  // gets the job the first one created (docs/api.md, "Idempotent submission").
  std::string request_id;
  if (auto it = request.headers.find("idempotency-key"); it != request.headers.end()) {
    static const std::regex kKey("[A-Za-z0-9._:-]{1,128}");
    if (!std::regex_match(it->second, kKey)) {
      return Status::InvalidArgument(
          "Idempotency-Key: must be 1-128 letters, digits, '.', '_', ':' or '-'");
    }
    request_id = it->second;
  }
  bool names_team = false;
  COHORT_ASSIGN_OR_RETURN(auto spec, ParseJobSpec(request.body, "job spec", &names_team));
  COHORT_ASSIGN_OR_RETURN(std::string team_note, TeamForSubmission(call, spec.team, names_team));
  auto submit = [this, user = call.caller.name, request_id,
                 team_note = std::move(team_note)](JobSpec spec) -> StatusOr<HttpResponse> {
    bool replayed = false;
    COHORT_ASSIGN_OR_RETURN(
        auto job, master_.Submit(std::move(spec), user, request_id, &replayed, team_note));
    HttpResponse response = JsonResponse(replayed ? 200 : 201, ToJson(job));
    if (replayed) response.headers.emplace_back("Idempotent-Replayed", "true");
    return response;
  };
  if (spec.datasets.empty()) {
    SendAnswer(*call.responder, submit(std::move(spec)));
    return Status::Ok();
  }
  // Every attempt reads the versions that were the latest when the job was submitted.
  std::vector<DatasetRef> refs = spec.datasets;
  const std::string team = spec.team;
  return PinDatasets(call, std::move(refs), team,
                     [responder = call.responder, submit = std::move(submit),
                      spec = std::move(spec)](StatusOr<std::vector<DatasetRef>> pinned) mutable {
                       if (!pinned.ok()) return SendAnswer(*responder, pinned.status());
                       spec.datasets = std::move(*pinned);
                       SendAnswer(*responder, submit(std::move(spec)));
                     });
}

StatusOr<HttpResponse> ApiServer::ListJobs(const Call& call) {
  const HttpRequest& request = call.request;
  COHORT_RETURN_IF_ERROR(CheckQuery(
      request, {"state", "team", "user", "name", "session", "limit", "before", "after"}));
  master::JobFilter filter;
  if (auto it = request.query.find("state"); it != request.query.end() && !it->second.empty()) {
    filter.state = ParseJobState(it->second);
    if (!filter.state) {
      return Status::InvalidArgument(fmt::format("state: \"{}\" is not a job state; use one of {}",
                                                 it->second, NameList(kJobStateNames, ", ")));
    }
  }
  COHORT_ASSIGN_OR_RETURN(auto query, JobPageFrom(request));
  // Always a page (job_pages.h): a bounded answer, however many jobs the master holds.
  JobPage page = SelectJobs(master_.ListJobs(filter), query,
                            [&](const Job& job) { return JsonText(JobJsonFor(call.caller, job)); });
  return HttpResponse{200, "application/json", JobPageAnswer(page)};
}

Status ApiServer::GetJob(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(JobId id, JobIdParam(call));
  const HttpRequest& request = call.request;
  const std::shared_ptr<Responder>& responder = call.responder;
  COHORT_ASSIGN_OR_RETURN(auto job, master_.GetJob(id));
  // Long polls answer with the whole job (AnswerJob), so only those who may read it wait.
  if (!request.query.count("wait_version") ||
      !auth::CanReadJob(call.caller, job->user, job->spec.team)) {
    responder->Send(JsonResponse(200, JobJsonFor(call.caller, *job)));
    return Status::Ok();
  }
  COHORT_ASSIGN_OR_RETURN(auto min_version, QueryInt(request, "wait_version", 0, 0, INT64_MAX));
  COHORT_ASSIGN_OR_RETURN(auto timeout, QueryInt(request, "timeout_ms", 30'000, 0, kMaxWaitMs));
  if (job->version > static_cast<uint64_t>(min_version) || timeout == 0) {
    responder->Send(JsonResponse(200, ToJson(*job)));
    return Status::Ok();
  }
  job_waiters_.Wait(id, static_cast<uint64_t>(min_version), std::chrono::milliseconds(timeout),
                    responder);
  return Status::Ok();
}

StatusOr<HttpResponse> ApiServer::KillJob(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(JobId id, JobIdParam(call));
  COHORT_ASSIGN_OR_RETURN(auto found, master_.GetJob(id));
  if (!auth::CanChangeJob(call.caller, found->user, found->spec.team)) {
    return Status::PermissionDenied(fmt::format(
        "{} may not kill job {} of user {}: only its owner, an admin of team {} or a cluster "
        "admin may",
        call.caller.Describe(), id, found->user, found->spec.team));
  }
  COHORT_ASSIGN_OR_RETURN(auto job, master_.Kill(id, call.caller.Describe()));
  return JsonResponse(200, ToJson(*job));
}

// Switches the connection to the session's terminal (docs/api.md, "Terminals"), relayed to
// its task; the attach is audited (audit_hook.cc) whether it is let in or not.
Status ApiServer::AttachTerminal(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(JobId id, JobIdParam(call));
  COHORT_ASSIGN_OR_RETURN(const Job* job, master_.GetJob(id));
  // A shell runs as the job's user: not even an admin of its team gets one.
  if (!call.caller.admin && call.caller.name != job->user) {
    return Status::PermissionDenied(
        fmt::format("{} may not attach to session {} of user {}: only its owner and cluster "
                    "admins may",
                    call.caller.Describe(), id, job->user));
  }
  COHORT_RETURN_IF_ERROR(CheckQuery(call.request, {"cols", "rows", "term"}));
  const auto& headers = call.request.headers;
  auto upgrade = headers.find("upgrade");
  auto connection = headers.find("connection");
  if (upgrade == headers.end() || !boost::iequals(upgrade->second, kTerminalProtocol) ||
      connection == headers.end() || !boost::icontains(connection->second, "upgrade")) {
    return Status::InvalidArgument(
        fmt::format("GET {} switches the connection to the {} protocol: send Connection: "
                    "Upgrade and Upgrade: {} (cohort shell --attach {} does)",
                    call.request.path, kTerminalProtocol, kTerminalProtocol, id));
  }
  COHORT_ASSIGN_OR_RETURN(auto cols, QueryInt(call.request, "cols", 80, 1, 10000));
  COHORT_ASSIGN_OR_RETURN(auto rows, QueryInt(call.request, "rows", 24, 1, 10000));
  std::string term;
  if (auto it = call.request.query.find("term"); it != call.request.query.end()) {
    if (!terminal::ValidTerm(it->second)) {
      return Status::InvalidArgument(fmt::format(
          "query parameter term: must be a terminal type such as xterm-256color (1 to {} "
          "letters, digits and .+-_)",
          terminal::kMaxTermLength));
    }
    term = it->second;
  }
  COHORT_ASSIGN_OR_RETURN(master::SessionEndpoint where,
                          master_.SessionEndpointOf(id, SessionKind::kShell));
  TerminalTarget target{
      where.node, where.host, where.port,
      terminal::Hello{std::move(where.credential), call.caller.name, term,
                      terminal::WindowSize{static_cast<int>(cols), static_cast<int>(rows)}}};
  spdlog::info("{} attaches to the terminal of session {} on node {}", call.caller.Describe(), id,
               where.node);
  call.responder->Upgrade(
      std::string(kTerminalProtocol), {},
      [this, id, target = std::move(target)](std::shared_ptr<ByteChannel> person) mutable {
        // An attach is use, as every key typed is (master/idle_sessions.h).
        master_.NoteSessionInput(id);
        auto relay = TerminalRelay::Start(
            ioc_, std::move(person), std::move(target),
            TerminalRelay::Callbacks{
                .on_input = [this, id] { master_.NoteSessionInput(id); },
                .on_end =
                    [id](const std::string& why) {
                      spdlog::info("a terminal of session {} detached: {}", id, why);
                    },
            });
        std::erase_if(terminals_, [](const auto& entry) { return entry.second.expired(); });
        terminals_.emplace(id, relay);
      });
  return Status::Ok();
}

// A session that ended (killed, idle, its node lost) takes its people with it: a terminal or
// kernel whose node vanished without a word would otherwise wait on a dead connection.
void ApiServer::CloseEndedSession(JobId id) {
  auto job = master_.GetJob(id);
  if (job.ok() && !IsTerminal((*job)->state)) return;
  std::string why = job.ok()
                        ? fmt::format("session {} has ended ({})", id, JobStateName((*job)->state))
                        : fmt::format("session {} is gone", id);
  auto [begin, end] = terminals_.equal_range(id);
  for (auto it = begin; it != end; ++it) {
    if (auto relay = it->second.lock(); relay && !relay->closed()) {
      relay->Notice(why);
      relay->Close(why);
    }
  }
  terminals_.erase(id);
  auto [first, last] = notebook_sockets_.equal_range(id);
  for (auto it = first; it != last; ++it) {
    if (auto socket = it->second.lock()) socket->Close();
  }
  notebook_sockets_.erase(id);
  session_notices_.erase(id);
}

void ApiServer::OnSessionNotice(JobId id, const std::string& text) {
  session_notices_[id] = SessionNotice{text, master_.Now()};
  auto [begin, end] = terminals_.equal_range(id);
  for (auto it = begin; it != end; ++it) {
    if (auto relay = it->second.lock(); relay && !relay->closed()) relay->Notice(text);
  }
}

StatusOr<HttpResponse> ApiServer::JobEvents(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(const Job* job, ReadableJob(call));
  const JobId id = job->id;
  COHORT_RETURN_IF_ERROR(CheckQuery(call.request, {"after", "limit"}));
  // A page, oldest first (docs/api.md, "Events"): a job's events grow with every attempt, and a
  // job of 1,024 tasks retried 100 times has over 100,000.
  COHORT_ASSIGN_OR_RETURN(auto after, QueryInt(call.request, "after", 0, 0, INT64_MAX));
  COHORT_ASSIGN_OR_RETURN(auto limit,
                          PageLimit(call.request, kDefaultEventPage, kMaxEventPage, "events"));
  state::EventRange range{static_cast<size_t>(after), limit, kMaxPageBytes};
  COHORT_ASSIGN_OR_RETURN(auto page, master_.Events(id, range));
  Json list = Json::array();
  for (const auto& e : page.events) list.push_back(ToJson(e));
  Json next = page.more ? Json(range.after + page.events.size()) : Json(nullptr);
  return JsonResponse(200, Json{{"events", list}, {"next", next}});
}

namespace {

double GpuHours(Duration d) { return static_cast<double>(d.count()) / 3.6e9; }

// The rank of a waiting job (master/job_rank.h); null for policies that do not rank jobs.
Json RankJson(const std::optional<master::JobRank>& rank) {
  if (!rank) return nullptr;
  Json estimate = nullptr;
  if (rank->estimate) {
    estimate = Json{{"gpu_hours", GpuHours(rank->estimate->gpu_time)},
                    {"samples", rank->estimate->samples},
                    {"basis", rank->estimate->basis}};
  }
  auto time = [](const std::optional<Timestamp>& t) {
    return t ? Json(FormatTimestamp(*t)) : Json(nullptr);
  };
  return Json{{"level", rank->level},
              {"levels", rank->levels},
              {"attained_gpu_hours", GpuHours(rank->attained)},
              {"estimate", estimate},
              {"promoted", rank->promoted},
              {"waiting_since", time(rank->waiting_since)},
              {"promoted_at", time(rank->promoted_at)}};
}

Json ExplanationJson(JobId id, const master::Explanation& e) {
  return Json{{"job_id", id},
              {"state", JobStateName(e.state)},
              {"summary", e.summary},
              {"details", e.details},
              {"unschedulable", e.unschedulable},
              {"ahead", e.ahead ? Json(*e.ahead) : Json(nullptr)},
              {"rank", RankJson(e.rank)},
              {"reserved_start",
               e.reserved_start ? Json(FormatTimestamp(*e.reserved_start)) : Json(nullptr)}};
}

}  // namespace

StatusOr<HttpResponse> ApiServer::ExplainJob(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(const Job* job, ReadableJob(call));
  const JobId id = job->id;
  COHORT_ASSIGN_OR_RETURN(auto e, master_.Explain(id));
  return JsonResponse(200, ExplanationJson(id, e));
}

StatusOr<HttpResponse> ApiServer::Queue(const Call& call) {
  struct Entry {
    const Job* job;
    Json why;
    size_t place;
  };
  std::vector<Entry> entries;
  size_t explained = 0;
  for (const Job* job : master_.ListJobs(master::JobFilter{JobState::kPending})) {
    Entry entry{job, nullptr, std::numeric_limits<size_t>::max()};
    // Explained in submission order up to the bound, and only to who may read the job: the
    // others show the job's own message, after them.
    if (explained < kMaxQueueExplained &&
        auth::CanReadJob(call.caller, job->user, job->spec.team)) {
      auto e = master_.Explain(job->id);
      if (e.ok()) {
        ++explained;
        entry.why = ExplanationJson(job->id, *e);
        if (e->ahead) entry.place = *e->ahead;
      }
    }
    if (entry.why.is_null()) {
      entry.why = Json{{"job_id", job->id},
                       {"summary", job->message},
                       {"details", Json::array()},
                       {"unschedulable", false},
                       {"ahead", nullptr}};
    }
    entries.push_back(std::move(entry));
  }
  // The policy's order; backing-off jobs have no place and wait for their time, after the others.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.place < b.place; });
  Json pending = Json::array();
  const size_t listed = std::min(entries.size(), kMaxQueueListed);
  for (size_t i = 0; i < listed; ++i) {
    pending.push_back(Json{{"job", JobJsonFor(call.caller, *entries[i].job)},
                           {"why", std::move(entries[i].why)}});
  }
  Json teams = Json::array();
  for (const auto& t : master_.teams().List()) teams.push_back(TeamJson(t));
  return JsonResponse(200, Json{{"pending", std::move(pending)},
                                {"more", entries.size() - listed},
                                {"teams", std::move(teams)}});
}

Status ApiServer::StreamLogs(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(const Job* readable, ReadableJob(call));
  const Job& job = *readable;
  const JobId id = job.id;
  const HttpRequest& request = call.request;
  const std::shared_ptr<Responder>& responder = call.responder;
  std::optional<int> attempt;
  if (request.query.count("attempt")) {
    COHORT_ASSIGN_OR_RETURN(auto a, QueryInt(request, "attempt", 0, 1, 1'000'000));
    if (a > job.attempt) {
      return Status::NotFound(
          fmt::format("job {} has no attempt {} (it is at attempt {})", id, a, job.attempt));
    }
    attempt = static_cast<int>(a);
  }
  std::optional<std::pair<std::string, int>> task;
  if (auto it = request.query.find("task"); it != request.query.end() && !it->second.empty()) {
    auto parts = Split(it->second, '/');
    std::vector<std::string> names;
    bool found = false;
    std::set<std::string> all;
    for (const auto& g : job.spec.tasks) {
      for (int i = 0; i < g.replicas; ++i) all.insert(fmt::format("{}/{}", g.role, i));
    }
    for (const auto& t : job.tasks) all.insert(t.Name());  // elastic replicas too
    for (const auto& name : all) {
      names.push_back(name);
      if (name == it->second) found = true;
    }
    if (!found) {
      return Status::NotFound(fmt::format("job {} has no task {}; its tasks are {}", id, it->second,
                                          Join(names, ", ")));
    }
    // A name from the list just checked: "<role>/<index>".
    task = std::make_pair(parts[0], static_cast<int>(*ParseInteger(parts[1], 0, INT32_MAX)));
  }
  bool follow = false;
  if (auto it = request.query.find("follow"); it != request.query.end()) {
    follow = it->second == "true" || it->second == "1" || it->second.empty();
  }
  // Each follower costs the master a connection and a chunk of memory for as long as the job
  // runs: their number per job is bounded.
  if (follow && !followers_.TryAdd(id)) {
    return Status::Unavailable(
        fmt::format("job {} already has {} log followers; try again once one has ended", id,
                    followers_.max_per_job()));
  }
  LogStream::Options options{id, attempt, task, follow};
  if (request.query.count("tail")) {
    auto tail = QueryInt(request, "tail", 0, 1, int64_t{64} << 20);
    if (!tail.ok()) {
      if (follow) followers_.Remove(id);
      return tail.status();
    }
    options.tail = *tail;
  }
  std::make_shared<LogStream>(ioc_, master_, job_changes_, std::move(options), responder,
                              follow ? &followers_ : nullptr)
      ->Start();
  return Status::Ok();
}

StatusOr<HttpResponse> ApiServer::ListTeams(const Call& call) {
  Json teams = Json::array();
  for (const auto& t : master_.teams().List()) teams.push_back(TeamJson(t));
  return JsonResponse(200, Json{{"teams", teams}});
}

StatusOr<HttpResponse> ApiServer::GetTeam(const Call& call) {
  const std::string& name = call.params.at("name");
  for (const auto& t : master_.teams().List()) {
    if (t.quota.name == name) return JsonResponse(200, TeamJson(t));
  }
  return Status::NotFound(fmt::format("team {} does not exist", name));
}

StatusOr<HttpResponse> ApiServer::SetTeam(const Call& call) {
  const std::string& name = call.params.at("name");
  const HttpRequest& request = call.request;
  COHORT_ASSIGN_OR_RETURN(auto doc, ParseJson(request.body));
  TeamQuota team;
  team.name = name;
  std::vector<std::string> problems;
  if (!doc.is_object()) {
    return Status::InvalidArgument(
        "the body must be an object: {\"guaranteed_gpus\": N, \"max_gpus\": M or null}");
  }
  for (const auto& [key, value] : doc.items()) {
    if (key == "guaranteed_gpus") {
      if (!value.is_number_integer()) {
        problems.push_back("guaranteed_gpus: must be an integer");
      } else {
        team.guaranteed_gpus = value.get<int64_t>();
      }
    } else if (key == "max_gpus") {
      if (value.is_null()) continue;
      if (!value.is_number_integer()) {
        problems.push_back("max_gpus: must be an integer or null");
      } else {
        team.max_gpus = value.get<int64_t>();
      }
    } else {
      problems.push_back(
          fmt::format("{}: unknown field; expected guaranteed_gpus or max_gpus", key));
    }
  }
  if (!doc.contains("guaranteed_gpus")) problems.push_back("guaranteed_gpus: required");
  if (!problems.empty()) {
    return Status::InvalidArgument("invalid team", problems);
  }
  COHORT_RETURN_IF_ERROR(master_.teams().Set(team).status());
  for (const auto& t : master_.teams().List()) {
    if (t.quota.name == name) return JsonResponse(200, TeamJson(t));
  }
  return JsonResponse(200, Json{{"name", name}});
}

StatusOr<HttpResponse> ApiServer::DeleteTeam(const Call& call) {
  const std::string& name = call.params.at("name");
  COHORT_RETURN_IF_ERROR(master_.teams().Delete(name));
  return JsonResponse(200, Json{{"deleted", name}});
}

StatusOr<HttpResponse> ApiServer::ListNodes(const Call& call) {
  Json nodes = Json::array();
  for (const auto& status : master_.nodes().List())
    nodes.push_back(NodeJson(status, master_.nodes().resources()));
  return JsonResponse(200, Json{{"nodes", nodes}});
}

namespace {

// The node as listed, after an admin changed it.
Json NodeAfter(master::Master& master, const std::string& id) {
  for (const auto& status : master.nodes().List()) {
    if (status.node->info.id == id) return NodeJson(status, master.nodes().resources());
  }
  return Json{{"id", id}};
}

}  // namespace

StatusOr<HttpResponse> ApiServer::DrainNode(const Call& call) {
  const std::string& id = call.params.at("node");
  std::string reason;
  if (!call.request.body.empty()) {
    COHORT_ASSIGN_OR_RETURN(auto doc, ParseJson(call.request.body));
    if (!doc.is_object()) {
      return Status::InvalidArgument("the body must be an object: {\"reason\": \"...\"}");
    }
    for (const auto& [key, value] : doc.items()) {
      if (key != "reason") {
        return Status::InvalidArgument(fmt::format("{}: unknown field; use reason", key));
      }
      if (!value.is_string() || value.get_ref<const std::string&>().size() > 1024) {
        return Status::InvalidArgument("reason: must be a string of at most 1024 bytes");
      }
      reason = value.get<std::string>();
    }
  }
  COHORT_RETURN_IF_ERROR(master_.nodes().Drain(id, std::move(reason)).status());
  return JsonResponse(200, NodeAfter(master_, id));
}

StatusOr<HttpResponse> ApiServer::UndrainNode(const Call& call) {
  const std::string& id = call.params.at("node");
  COHORT_RETURN_IF_ERROR(master_.nodes().Undrain(id).status());
  return JsonResponse(200, NodeAfter(master_, id));
}

StatusOr<HttpResponse> ApiServer::RemoveNode(const Call& call) {
  const std::string& id = call.params.at("node");
  COHORT_RETURN_IF_ERROR(master_.nodes().Remove(id));
  return JsonResponse(200, Json{{"removed", id}});
}

StatusOr<HttpResponse> ApiServer::RegisterAgent(const Call& call) {
  const HttpRequest& request = call.request;
  COHORT_ASSIGN_OR_RETURN(auto doc, ParseJson(request.body));
  COHORT_ASSIGN_OR_RETURN(auto info, NodeInfoFromJson(doc));
  COHORT_RETURN_IF_ERROR(ValidateNodeInfo(info));
  std::string id = info.id;
  // A node's credential registers that node only; the join token registers any, and takes a
  // name over from a machine that had it (docs/security.md, "Agents").
  if (call.caller.kind == auth::CallerKind::kNode && call.caller.name != id) {
    return Status::PermissionDenied(
        fmt::format("the credential of node {} cannot register node {}", call.caller.name, id));
  }
  std::optional<master::IssuedToken> credential;
  if (call.caller.kind == auth::CallerKind::kJoin) {
    // Issued before the node is taken in: a failure leaves the node as it was, and a retry
    // with the join token revokes this one again.
    COHORT_RETURN_IF_ERROR(master_.accounts().RevokeAll(TokenKind::kNode, id));
    COHORT_ASSIGN_OR_RETURN(auto issued,
                            master_.accounts().Issue(TokenKind::kNode, id, "agent credential"));
    credential = std::move(issued);
    spdlog::info("node {} joined with the join token from {}; its credential is {}", id,
                 request.remote, credential->record.id);
  }
  COHORT_ASSIGN_OR_RETURN(auto desired, master_.nodes().Register(std::move(info)));
  // {"credential", "desired", "node_id"}, in the order JsonText writes keys; the desired state
  // as DesiredStateText writes it.
  std::string text = "{";
  if (credential) text += "\"credential\":" + JsonText(Json(credential->token)) + ",";
  text += "\"desired\":" + DesiredStateText(desired) + ",\"node_id\":" + JsonText(Json(id)) + "}";
  return HttpResponse{200, "application/json", std::move(text)};
}

Status ApiServer::SyncAgent(const Call& call) {
  const std::string& node_id = call.params.at("node");
  const HttpRequest& request = call.request;
  const std::shared_ptr<Responder>& responder = call.responder;
  COHORT_RETURN_IF_ERROR(CheckNodeId(node_id));
  COHORT_ASSIGN_OR_RETURN(auto doc, ParseJson(request.body));
  COHORT_ASSIGN_OR_RETURN(auto report, AgentReportFromJson(doc));
  COHORT_ASSIGN_OR_RETURN(auto min_version, QueryInt(request, "wait_version", 0, 0, INT64_MAX));
  COHORT_ASSIGN_OR_RETURN(auto timeout, QueryInt(request, "timeout_ms", 0, 0, kMaxWaitMs));
  COHORT_ASSIGN_OR_RETURN(auto desired, master_.nodes().Sync(node_id, report));
  // Words the agent acts on now (ended tasks to forget, uploads allowed, refused or recorded)
  // answer at once: a parked poll's answer is made anew when it ends, without them.
  const bool words = !desired.forget.empty() || !desired.allow_uploads.empty() ||
                     !desired.refuse_uploads.empty() || !desired.forget_uploads.empty();
  if (desired.version > static_cast<uint64_t>(min_version) || timeout == 0 || words) {
    responder->Send(DesiredStateResponse(desired));
    return Status::Ok();
  }
  // A parked poll is no heartbeat (a paused agent's socket stays open): the agent must come
  // back several times within the node timeout, whatever wait it asked for.
  int64_t wait_ms = std::min<int64_t>(timeout, ToMillis(master_.config().node_timeout) / 3);
  node_waiters_.Wait(node_id, static_cast<uint64_t>(min_version),
                     std::chrono::milliseconds(wait_ms), responder);
  return Status::Ok();
}

Status ApiServer::UploadLog(const Call& call) {
  const std::string& node_id = call.params.at("node");
  const std::string& task_key = call.params.at("task");
  const HttpRequest& request = call.request;
  COHORT_RETURN_IF_ERROR(CheckNodeId(node_id));
  COHORT_ASSIGN_OR_RETURN(auto offset, QueryInt(request, "offset", -1, 0, INT64_MAX));
  if (offset < 0) {
    return Status::InvalidArgument("offset: required");
  }
  COHORT_ASSIGN_OR_RETURN(auto task, ParseTaskId(task_key));
  master::LogAppend options;
  if (auto it = request.query.find("skip"); it != request.query.end()) {
    options.skip = it->second == "true" || it->second == "1" || it->second.empty();
  }
  if (request.query.count("end")) {
    COHORT_ASSIGN_OR_RETURN(auto end, QueryInt(request, "end", 0, 0, INT64_MAX));
    options.end = end;
  }
  // The bytes are written off the event loop; the answer comes once they are on disk.
  auto answer = [this, responder = call.responder, task](StatusOr<int64_t> size) {
    if (size.ok()) {
      // The limit tells the agent how far behind it may fall before it skips ahead.
      return responder->Send(
          JsonResponse(200, Json{{"size", *size}, {"limit", master_.logs().limits().per_task}}));
    }
    HttpResponse error = ErrorResponse(size.status());
    if (size.status().code() == StatusCode::kFailedPrecondition) {
      // Tell the agent where to resume.
      Json body = Json::parse(error.body);
      auto stored = master_.logs().Size(task);
      body["size"] = stored.ok() ? *stored : 0;
      error.body = Dump(body);
    }
    responder->Send(error);
  };
  master_.AppendLog(node_id, task, offset, request.body, options, std::move(answer));
  return Status::Ok();
}

}  // namespace cohort::api
