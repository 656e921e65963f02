// Notebooks through the master (docs/runtimes.md, "Notebooks"; docs/security.md, "Notebooks"):
// a notebook session's Jupyter listens on its node, and people reach it only here, under
// /api/v1/jobs/ID/notebook/, where the master lets its owner in and forwards each request with
// the Jupyter token that only the master and the task hold (api/http_proxy.h).
//
// A browser is let in by a one-time link (POST .../notebook-link, audited): opening it sets a
// cookie scoped to that notebook's path (HttpOnly, SameSite=Strict) that the master checks on
// every request and never forwards. A script can use the owner's token instead. Only the owner
// is let in, not even a cluster admin: a notebook's pages run the owner's code in the browser
// that opens them, at the master's origin.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/algorithm/string/predicate.hpp>
#include <boost/asio/post.hpp>

#include "api/api_server.h"
#include "api/cookies.h"
#include "api/request_params.h"
#include "api/websocket_frames.h"
#include "common/strings.h"
#include "framework/frameworks.h"
#include "model/json.h"

namespace cohort::api {
namespace {

// Served by the master under the notebook's path, never forwarded: the page's banner and what
// it asks for.
constexpr std::string_view kNoticePath = "cohort-session";
constexpr std::string_view kBannerScriptPath = "cohort-session.js";

// What a notebook's codes and passes are issued to: one notebook of one user.
std::string PassSubject(JobId job, std::string_view user) {
  return fmt::format("{}/{}", job, user);
}

bool IsRead(std::string_view method) { return method == "GET" || method == "HEAD"; }

// Shows the session's newest notice (an idle or preemption warning) at the top of each of
// Jupyter's pages, asking every 10 s: GETs that are no use of the session.
constexpr std::string_view kBannerScript = R"js((() => {
  const base = document.currentScript.src.replace(/cohort-session\.js.*$/, '');
  const bar = document.createElement('div');
  bar.id = 'cohort-session-notice';
  bar.setAttribute('role', 'alert');
  bar.style.cssText = 'display:none;position:fixed;top:0;left:0;right:0;z-index:100000;' +
    'padding:6px 12px;font:14px sans-serif;background:#fff3cd;color:#664d03;' +
    'border-bottom:1px solid #ffda6a';
  document.body.appendChild(bar);
  let shown = '';
  async function poll() {
    try {
      const answer = await fetch(base + 'cohort-session', {cache: 'no-store'});
      if (!answer.ok) return;
      const session = await answer.json();
      const text = session.notice ? 'Cohort: ' + session.notice.text : '';
      if (text === shown) return;
      shown = text;
      bar.textContent = text;
      bar.style.display = text ? 'block' : 'none';
    } catch (e) { /* the master is away: the next poll tells */ }
  }
  poll();
  setInterval(poll, 10000);
})();
)js";

// Adds the banner's script to the HTML pages Jupyter answers with; everything else as it was.
class BannerResponder final : public ForwardingResponder {
 public:
  BannerResponder(std::shared_ptr<Responder> inner, std::string base)
      : ForwardingResponder(std::move(inner)), base_(std::move(base)) {}

  void Send(HttpResponse response) override {
    const bool encoded =
        std::any_of(response.headers.begin(), response.headers.end(),
                    [](const auto& h) { return boost::iequals(h.first, "content-encoding"); });
    if (response.status == 200 && !encoded &&
        boost::istarts_with(response.content_type, "text/html")) {
      std::string tag = fmt::format("<script src=\"{}{}\"></script>", base_, kBannerScriptPath);
      size_t end = response.body.rfind("</body>");
      response.body.insert(end == std::string::npos ? response.body.size() : end, tag);
    }
    ForwardingResponder::Send(std::move(response));
  }

 private:
  std::string base_;
};

// A page that the link answers with: it sets the cookie and then goes on to the notebook by
// itself, so that the next request is the master's own page's (SameSite=Strict sends the
// cookie with it, whatever site the link was opened from).
std::string LinkPage(std::string_view tree) {
  return fmt::format(
      "<!doctype html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0; "
      "url={0}\"><title>Opening the notebook</title><p>Opening the notebook: <a "
      "href=\"{0}\">{0}</a></p>\n",
      tree);
}

// A refusal; a 401 names how to authenticate (RFC 9110 11.6.1), as the API's other 401s do.
HttpResponse Refusal(const Status& status) {
  HttpResponse refused = ErrorResponse(status);
  if (refused.status == 401)
    refused.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"cohort\"");
  return refused;
}

}  // namespace

Status ApiServer::CheckNotebookCaller(const Call& call, const Job& job) {
  const auth::Principal& caller = call.caller;
  auto only_owner = [&] {
    return Status::PermissionDenied(fmt::format(
        "{} may not open notebook {} of user {}: only its owner may, not even an admin (its "
        "pages run the owner's code in the browser that opens them); an admin may stop it with "
        "cohort kill {}",
        caller.Describe(), job.id, job.user, job.id));
  };
  if (caller.kind != auth::CallerKind::kAnonymous) {
    return caller.is_user() && caller.name == job.user ? Status::Ok() : only_owner();
  }
  auto cookie_header = call.request.headers.find("cookie");
  std::optional<std::string> pass;
  if (cookie_header != call.request.headers.end()) {
    pass = CookieValue(cookie_header->second, kNotebookCookie);
  }
  if (!pass) {
    return Status::Unauthenticated(
        fmt::format("open notebook {} with its link (cohort notebook --open {}, or the dashboard's "
                    "Sessions), or send its owner's token",
                    job.id, job.id));
  }
  auto session = notebook_passes_.Authenticate(*pass, master_.Now());
  if (!session.ok()) {
    return CountRefusal(call.request,
                        Status::Unauthenticated(fmt::format(
                            "{}: open notebook {} with a new link (cohort notebook --open {})",
                            session.status().message(), job.id, job.id)));
  }
  if (session->user != PassSubject(job.id, job.user)) {
    return CountRefusal(call.request, Status::Unauthenticated(fmt::format(
                                          "this browser's pass is for another notebook than {}; "
                                          "open it with its own link (cohort notebook --open {})",
                                          job.id, job.id)));
  }
  if (!master_.accounts().FindUser(job.user)) {
    return Status::Unauthenticated(
        fmt::format("notebook {} belongs to user {}, who no longer exists", job.id, job.user));
  }
  return Status::Ok();
}

StatusOr<HttpResponse> ApiServer::CreateNotebookLink(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(JobId id, JobIdParam(call));
  COHORT_ASSIGN_OR_RETURN(const Job* job, master_.GetJob(id));
  COHORT_RETURN_IF_ERROR(CheckNotebookCaller(call, *job));
  if (!call.request.body.empty() && call.request.body != "{}") {
    return Status::InvalidArgument("the body must be empty or {}: a link is for the caller only");
  }
  // Only for a notebook that runs: a link is good for 2 minutes.
  COHORT_RETURN_IF_ERROR(master_.SessionEndpointOf(id, SessionKind::kNotebook).status());
  COHORT_ASSIGN_OR_RETURN(auto issued,
                          notebook_codes_.Issue(PassSubject(id, job->user), master_.Now()));
  // In the query: the master must see it. Good once, for minutes; the page it opens sends no
  // Referer (Referrer-Policy), so it is in no other site's logs.
  std::string path =
      fmt::format("{}?{}={}", framework::NotebookBasePath(id), kNotebookLinkParam, issued.code);
  Json answer{{"job", id}, {"path", path}, {"expires_at", FormatTimestamp(issued.expires_at)}};
  if (auto host = call.request.headers.find("host"); host != call.request.headers.end()) {
    answer["url"] = fmt::format("{}://{}{}", tls_ ? "https" : "http", host->second, path);
  }
  return JsonResponse(201, answer);
}

StatusOr<HttpResponse> ApiServer::OpenNotebookLink(const Call& call, const Job& job,
                                                   const std::string& code) {
  const Timestamp now = master_.Now();
  auto subject = notebook_codes_.Redeem(code, now);
  if (!subject.ok()) {
    return CountRefusal(call.request, Status::Unauthenticated(fmt::format(
                                          "{}: ask for a new link with cohort notebook --open {}",
                                          subject.status().message(), job.id)));
  }
  if (*subject != PassSubject(job.id, job.user)) {
    return CountRefusal(call.request,
                        Status::Unauthenticated(fmt::format(
                            "this link is for another notebook than {}; ask for its own with "
                            "cohort notebook --open {}",
                            job.id, job.id)));
  }
  COHORT_ASSIGN_OR_RETURN(auto opened, notebook_passes_.Open(*subject, now));
  const std::string base = framework::NotebookBasePath(job.id);
  const auto max_age =
      std::chrono::duration_cast<std::chrono::seconds>(opened.session.expires_at - now);
  spdlog::info("user {} opened notebook {} in a browser from {} (pass {}, until {})", job.user,
               job.id, ClientAddress(call.request.remote), opened.session.id,
               FormatTimestamp(opened.session.expires_at));
  HttpResponse page{200, "text/html; charset=utf-8", LinkPage(base + "tree")};
  page.headers.emplace_back(
      "Set-Cookie",
      fmt::format("{}={}; Path={}; Max-Age={}; HttpOnly; SameSite=Strict{}", kNotebookCookie,
                  opened.secret, base, max_age.count(), tls_ ? "; Secure" : ""));
  page.headers.emplace_back("Cache-Control", "no-store");
  page.headers.emplace_back("Referrer-Policy", "no-referrer");
  return page;
}

HttpResponse ApiServer::NotebookNotice(const Job& job) const {
  Json notice = nullptr;
  if (IsTerminal(job.state)) {
    notice =
        Json{{"text",
              fmt::format("this session has ended ({}{}{}); start another with cohort "
                          "notebook",
                          JobStateName(job.state), job.message.empty() ? "" : ": ", job.message)},
             {"at", job.finished_at ? Json(FormatTimestamp(*job.finished_at)) : Json(nullptr)}};
  } else if (auto it = session_notices_.find(job.id); it != session_notices_.end()) {
    notice = Json{{"text", it->second.text}, {"at", FormatTimestamp(it->second.at)}};
  }
  HttpResponse response = JsonResponse(
      200, Json{{"job", job.id}, {"state", JobStateName(job.state)}, {"notice", notice}});
  response.headers.emplace_back("Cache-Control", "no-store");
  return response;
}

Status ApiServer::ServeNotebook(const Call& call) {
  COHORT_ASSIGN_OR_RETURN(JobId id, JobIdParam(call));
  COHORT_ASSIGN_OR_RETURN(const Job* job, master_.GetJob(id));
  const HttpRequest& request = call.request;
  std::string rest;
  if (auto it = call.params.find("path"); it != call.params.end()) rest = it->second;
  for (const std::string& segment : Split(rest, '/')) {
    if (segment == "." || segment == "..") {
      return Status::InvalidArgument(
          fmt::format("path {}: '.' and '..' segments are not served", request.path));
    }
  }
  if (auto link = request.query.find(std::string(kNotebookLinkParam));
      link != request.query.end()) {
    if (request.method != "GET") {
      return Status::InvalidArgument(
          fmt::format("{}: a notebook's link is opened with GET", kNotebookLinkParam));
    }
    SendAnswer(*call.responder, OpenNotebookLink(call, *job, link->second));
    return Status::Ok();
  }
  if (Status allowed = CheckNotebookCaller(call, *job); !allowed.ok()) {
    call.responder->Send(Refusal(allowed));
    return Status::Ok();
  }
  // Asked by the pages of a notebook that may have ended since they were loaded.
  if (rest == kNoticePath && IsRead(request.method)) {
    call.responder->Send(NotebookNotice(*job));
    return Status::Ok();
  }
  COHORT_ASSIGN_OR_RETURN(master::SessionEndpoint where,
                          master_.SessionEndpointOf(id, SessionKind::kNotebook));
  const std::string base = framework::NotebookBasePath(id);
  if (rest == kBannerScriptPath && IsRead(request.method)) {
    HttpResponse script{200, "text/javascript; charset=utf-8", std::string(kBannerScript)};
    script.headers.emplace_back("Cache-Control", "no-cache");
    call.responder->Send(std::move(script));
    return Status::Ok();
  }
  const auto& headers = request.headers;
  const bool upgrade = headers.count("upgrade") > 0;
  // Another site's page may not write to the notebook nor open its kernels: a browser names the
  // page's origin, which must be the master's own (the cookie's SameSite says the same).
  if (!IsRead(request.method) || upgrade) {
    auto origin = headers.find("origin");
    auto host = headers.find("host");
    if (origin != headers.end() && origin->second != "null" &&
        (host == headers.end() || (origin->second != "http://" + host->second &&
                                   origin->second != "https://" + host->second))) {
      return Status::PermissionDenied(
          fmt::format("a page of {} may not change notebook {}: only the master's own pages may",
                      origin->second, id));
    }
    // A person at work: saving, running, opening a kernel (master/idle_sessions.h).
    master_.NoteSessionInput(id);
  }
  HttpRequest forwarded = request;
  if (auto cookie = forwarded.headers.find("cookie"); cookie != forwarded.headers.end()) {
    cookie->second = WithoutCookie(cookie->second, kNotebookCookie);
    if (cookie->second.empty()) forwarded.headers.erase(cookie);
  }
  // The request line as the browser sent it: Jupyter serves the same path (its base_url), and
  // names with spaces or '%' stay as they were encoded.
  std::string target = request.target.empty() ? request.path : request.target;
  // ".../notebook" without its slash is the notebook's root, which Jupyter serves at base_url.
  if (rest.empty() && !request.path.ends_with('/')) {
    size_t query = target.find('?');
    target = base + (query == std::string::npos ? "" : target.substr(query));
  }
  ProxyTarget to{fmt::format("the notebook of job {} on node {}", id, where.node),
                 where.host,
                 where.port,
                 std::move(target),
                 {{"Authorization", "token " + where.credential}}};
  ProxyLimits limits;
  limits.max_response_bytes = kNotebookBodyLimit;
  limits.whole_types = {"text/html"};  // for the banner (BannerResponder)
  auto frames = std::make_shared<WebSocketFrames>();
  auto proxied = Proxy(ioc_, forwarded, std::make_shared<BannerResponder>(call.responder, base),
                       std::move(to), limits, [this, id, frames](std::string_view bytes) {
                         // A kernel message is use; the browser's pongs and pings are not.
                         if (frames->Feed(bytes)) master_.NoteSessionInput(id);
                       });
  if (upgrade) {
    std::erase_if(notebook_sockets_, [](const auto& entry) { return entry.second.expired(); });
    notebook_sockets_.emplace(id, proxied);
  }
  return Status::Ok();
}

}  // namespace cohort::api
