// The dashboard's sign-in (docs/security.md, "Dashboard sign-in"; docs/api.md, "Signing in to
// the dashboard"): a user with a token asks for a one-time code; the page that the code's link
// opens exchanges it for a session; signing out revokes the session. Neither a code nor a
// session's secret is ever logged or audited: only ids and users are.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "api/api_server.h"
#include "api/request_params.h"
#include "auth/token.h"
#include "model/json.h"

namespace cohort::api {
namespace {

// Whether the request was authenticated with a session's secret rather than a token.
bool CalledWithSession(const HttpRequest& request) {
  auto it = request.headers.find("authorization");
  if (it == request.headers.end()) return false;
  auto secret = auth::BearerToken(it->second);
  return secret.ok() && secret->starts_with(auth::kSessionPrefix);
}

}  // namespace

StatusOr<HttpResponse> ApiServer::CreateSignInCode(const Call& call) {
  if (!call.request.body.empty() && call.request.body != "{}") {
    return Status::InvalidArgument("the body must be empty or {}: a code is for the caller only");
  }
  COHORT_ASSIGN_OR_RETURN(auto issued, sign_in_codes_.Issue(call.caller.name, master_.Now()));
  // In the fragment, never the query: a browser sends neither it nor the code to any server,
  // so no access log, proxy or Referer ever holds it.
  Json answer{{"code", issued.code},
              {"expires_at", FormatTimestamp(issued.expires_at)},
              {"user", call.caller.name}};
  if (auto host = call.request.headers.find("host"); host != call.request.headers.end()) {
    answer["url"] =
        fmt::format("{}://{}/#signin={}", tls_ ? "https" : "http", host->second, issued.code);
  }
  return JsonResponse(201, answer);
}

StatusOr<HttpResponse> ApiServer::OpenSession(const Call& call) {
  auto doc = ParseJson(call.request.body);
  if (!doc.ok() || !doc->is_object() || !doc->contains("code") || !(*doc)["code"].is_string() ||
      doc->size() != 1) {
    return Status::InvalidArgument(
        "the body must be {\"code\": \"cohc_...\"}, the code of a link from `cohort dashboard`");
  }
  const Timestamp now = master_.Now();
  auto user = sign_in_codes_.Redeem((*doc)["code"].get<std::string>(), now);
  if (!user.ok()) {
    // Refused as a token would be (RFC 6750): counted against the address, and said so.
    HttpResponse refused = ErrorResponse(CountRefusal(call.request, user.status()));
    if (refused.status == 401) {
      refused.headers.emplace_back("WWW-Authenticate",
                                   "Bearer realm=\"cohort\", error=\"invalid_token\"");
    }
    return refused;
  }
  if (!master_.accounts().FindUser(*user)) {
    return Status::Unauthenticated(
        fmt::format("the sign-in code belongs to user {}, who no longer exists", *user));
  }
  COHORT_ASSIGN_OR_RETURN(auto opened, sessions_.Open(*user, now));
  spdlog::info("user {} signed in to the dashboard from {} (session {}, until {})", *user,
               ClientAddress(call.request.remote), opened.session.id,
               FormatTimestamp(opened.session.expires_at));
  return JsonResponse(201, Json{{"session", opened.secret},
                                {"id", opened.session.id},
                                {"user", *user},
                                {"expires_at", FormatTimestamp(opened.session.expires_at)}});
}

StatusOr<HttpResponse> ApiServer::CloseSession(const Call& call) {
  if (!CalledWithSession(call.request) || !sessions_.Find(call.caller.token_id)) {
    return Status::FailedPrecondition(
        "this call was not made with a dashboard session, so there is none to sign out; an API "
        "token is revoked with `cohort token revoke ID`");
  }
  COHORT_RETURN_IF_ERROR(sessions_.Revoke(call.caller.token_id, master_.Now()));
  spdlog::info("user {} signed out of the dashboard (session {})", call.caller.name,
               call.caller.token_id);
  return JsonResponse(200, Json{{"signed_out", call.caller.token_id}});
}

}  // namespace cohort::api
