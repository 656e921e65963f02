// The audit of state-changing API calls (docs/security.md, "Audit and accounting"): which calls
// are recorded, what an entry keeps of a request and of its answer, and the responder through
// which every answer to an audited call passes.
//
// An entry is begun before the call runs (a call whose entry cannot be written is refused and
// does nothing) and completed with the answer before the client sees it (if that write fails,
// the client gets an error instead of the answer, and the entry stays without an outcome).
// Never kept: bodies, query strings, header values (tokens, Authorization), environments.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "api/http_server.h"
#include "api/router.h"
#include "common/status.h"
#include "state/audit.h"

namespace cohort::api {

// Every method but GET and HEAD (save attaching to a session's terminal, a GET that switches
// protocols), except agents' syncs and log uploads (several a second from
// every agent, and changing nothing an admin did) and datasets' chunks (asked about and uploaded
// by the thousand, no one's until a recorded commit names them); agents' registrations are
// recorded.
bool IsAudited(const HttpRequest& request);

// The entry as it is begun: who (the caller's name, given), from where, what, and on what
// ("job 12", "team vision", "node gpu-7", from the route's parameters). Text is bounded and
// made UTF-8.
state::AuditEntry BeginEntry(const HttpRequest& request, const PathParams& params,
                             std::string user);

// What an answer adds to its entry: a target only the answer names (a new job's id, a
// registered node), and for an error its code and message. The message of a 400 to a request
// with a body is not kept: it may quote the body.
struct AuditOutcome {
  std::string target;
  std::string outcome;
};
// What the entry's call was, as its answer is read: the request's method and path, and whether
// it had a body.
struct AuditedCall {
  std::string method;
  std::string path;
  std::string remote;
  bool had_body = false;
  std::string target;  // from the route, if any
};
AuditOutcome OutcomeOf(const AuditedCall& call, const HttpResponse& response);

// Completes the entry when the call answers, then answers. `finish` writes the entry's outcome;
// if it fails, the client gets that error (500, or 507 for a full disk) instead.
class AuditingResponder final : public ForwardingResponder {
 public:
  using Finish = std::function<Status(int status, const AuditOutcome& outcome)>;
  AuditingResponder(std::shared_ptr<Responder> inner, AuditedCall call, Finish finish);

  void Send(HttpResponse response) override;
  void StartStream(int status, std::string content_type,
                   std::vector<std::pair<std::string, std::string>> headers = {}) override;
  void Upgrade(std::string protocol, std::vector<std::pair<std::string, std::string>> headers,
               std::function<void(std::shared_ptr<ByteChannel>)> then) override;

 private:
  // Writes the outcome once; the error to answer with instead, if that failed.
  Status Complete(const HttpResponse& response);

  AuditedCall call_;
  Finish finish_;
  bool completed_ = false;
};

}  // namespace cohort::api
