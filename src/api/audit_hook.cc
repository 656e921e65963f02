#include "api/audit_hook.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "api/api_server.h"
#include "common/strings.h"
#include "model/json.h"

namespace cohort::api {
namespace {

// Bounds on what one entry stores of a request: a stranger's 8 KiB URL is not kept whole.
constexpr size_t kMaxMethod = 16;
constexpr size_t kMaxPath = 256;
constexpr size_t kMaxTarget = 160;
constexpr size_t kMaxOutcome = 240;

std::string Bounded(std::string_view text, size_t max) {
  if (text.size() > max) return ValidUtf8(text.substr(0, max)) + "...";
  return ValidUtf8(text);
}

}  // namespace

bool IsAudited(const HttpRequest& request) {
  // An attach to a session's shell is a GET, and recorded: who got a shell in whose job.
  if (request.method == "GET" && MatchPath("/api/v1/jobs/{id}/terminal", request.path)) {
    return true;
  }
  if (request.method == "GET" || request.method == "HEAD") return false;
  // A notebook's own traffic (saves, kernels) is its owner's work on the node, not a change to
  // the cluster; the link that let the browser in is recorded (POST .../notebook-link).
  if (MatchPath("/api/v1/jobs/{id}/notebook/{path...}", request.path)) return false;
  if (request.method == "POST" && (MatchPath("/api/v1/agents/{node}/sync", request.path) ||
                                   MatchPath("/api/v1/agents/{node}/logs/{task}", request.path))) {
    return false;
  }
  // A dataset's chunks: thousands for one `cohort data put`, asked about or stored under their
  // own hash, no one's until a version names them; the commit that names them is recorded.
  if ((request.method == "POST" && request.path == "/api/v1/blobs/missing") ||
      (request.method == "PUT" && MatchPath("/api/v1/blobs/{sha256}", request.path))) {
    return false;
  }
  return true;
}

state::AuditEntry BeginEntry(const HttpRequest& request, const PathParams& params,
                             std::string user) {
  state::AuditEntry entry;
  entry.user = Bounded(user, kMaxTarget);
  entry.remote = Bounded(request.remote, kMaxTarget);
  entry.method = Bounded(request.method, kMaxMethod);
  entry.path = Bounded(request.path, kMaxPath);
  for (const auto& [name, kind] : {std::pair{"id", "job"}, {"name", "team"}, {"node", "node"}}) {
    if (auto it = params.find(name); it != params.end()) {
      entry.target = Bounded(fmt::format("{} {}", kind, it->second), kMaxTarget);
    }
  }
  return entry;
}

AuditOutcome OutcomeOf(const AuditedCall& call, const HttpResponse& response) {
  AuditOutcome out{call.target, ""};
  bool ok = response.status / 100 == 2 || response.status == 101;
  // Only routes without a parameter name their target in the answer; only those are read.
  if (ok && call.target.empty() && call.method == "POST" &&
      (call.path == "/api/v1/jobs" || call.path == "/api/v1/agents/register")) {
    auto doc = ParseJson(response.body);
    if (doc.ok() && doc->is_object()) {
      if (auto id = doc->find("id"); id != doc->end() && id->is_number_integer()) {
        out.target = fmt::format("job {}", id->get<int64_t>());
      } else if (auto node = doc->find("node_id"); node != doc->end() && node->is_string()) {
        out.target = Bounded("node " + node->get<std::string>(), kMaxTarget);
      }
    }
  }
  if (ok) return out;
  std::string code = "error";
  std::string message;
  auto doc = ParseJson(response.body);
  if (doc.ok() && doc->is_object() && doc->contains("error") && (*doc)["error"].is_object()) {
    const Json& e = (*doc)["error"];
    if (e.contains("code") && e["code"].is_string()) code = e["code"].get<std::string>();
    if (e.contains("message") && e["message"].is_string())
      message = e["message"].get<std::string>();
  }
  if (response.status == 400 && call.had_body) {
    out.outcome = Bounded(code + " (message not kept: it may quote the request body)", kMaxOutcome);
  } else {
    out.outcome = Bounded(message.empty() ? code : code + ": " + message, kMaxOutcome);
  }
  return out;
}

AuditingResponder::AuditingResponder(std::shared_ptr<Responder> inner, AuditedCall call,
                                     Finish finish)
    : ForwardingResponder(std::move(inner)), call_(std::move(call)), finish_(std::move(finish)) {}

Status AuditingResponder::Complete(const HttpResponse& response) {
  if (completed_) return Status::Ok();
  completed_ = true;
  Status s = finish_(response.status, OutcomeOf(call_, response));
  if (s.ok()) return s;
  spdlog::error("audit: {} {} from {} answered {}, but its entry could not be completed: {}",
                call_.method, call_.path, call_.remote, response.status, s.ToString());
  return Status(s.code() == StatusCode::kResourceExhausted ? s.code() : StatusCode::kInternal,
                fmt::format("the call was carried out, but its audit entry could not be completed "
                            "({}); the audit log keeps the call without its outcome",
                            s.message()));
}

void AuditingResponder::Send(HttpResponse response) {
  Status s = Complete(response);
  ForwardingResponder::Send(s.ok() ? std::move(response) : ErrorResponse(s));
}

void AuditingResponder::StartStream(int status, std::string content_type,
                                    std::vector<std::pair<std::string, std::string>> headers) {
  HttpResponse head{status, content_type, ""};
  Status s = Complete(head);
  if (!s.ok()) return ForwardingResponder::Send(ErrorResponse(s));
  ForwardingResponder::StartStream(status, std::move(content_type), std::move(headers));
}

void AuditingResponder::Upgrade(std::string protocol,
                                std::vector<std::pair<std::string, std::string>> headers,
                                std::function<void(std::shared_ptr<ByteChannel>)> then) {
  Status s = Complete(HttpResponse{101, "", ""});
  if (!s.ok()) return ForwardingResponder::Send(ErrorResponse(s));
  ForwardingResponder::Upgrade(std::move(protocol), std::move(headers), std::move(then));
}

}  // namespace cohort::api
