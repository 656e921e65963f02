// The dashboard's sign-in through the API (docs/api.md, "Signing in to the dashboard"): codes
// exchanged for sessions that act as their user, refused when used, expired or signed out.
#include <gtest/gtest.h>

#include "api/served_master_test_fixture.h"
#include "model/json.h"

namespace cohort::api {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

class SignIn : public ServedMaster {
 protected:
  // One request with this bearer credential (none if empty).
  HttpResponse As(const std::string& credential, std::string method, std::string path,
                  std::string body = {}) {
    HttpRequest request;
    request.method = std::move(method);
    request.path = std::move(path);
    request.body = std::move(body);
    if (!credential.empty()) request.headers["authorization"] = "Bearer " + credential;
    request.headers["host"] = "gpu-master:7420";
    request.remote = "127.0.0.1:40000";
    auto recorder = std::make_shared<RecordingResponder>();
    api_->Handle(std::move(request), recorder);
    EXPECT_TRUE(loop_.Settle(ioc_));
    EXPECT_EQ(recorder->answers, 1);
    return recorder->response;
  }
  static Json Body(const HttpResponse& r) {
    auto doc = ParseJson(r.body);
    return doc.ok() ? *doc : Json();
  }
  std::string Code(const std::string& credential) {
    HttpResponse r = As(credential, "POST", "/api/v1/auth/signin-codes");
    EXPECT_EQ(r.status, 201) << r.body;
    return Body(r).value("code", "");
  }
  HttpResponse Exchange(const std::string& code) {
    return As("", "POST", "/api/v1/auth/sessions", Json{{"code", code}}.dump());
  }
  std::string Session(const std::string& code) {
    HttpResponse r = Exchange(code);
    EXPECT_EQ(r.status, 201) << r.body;
    return Body(r).value("session", "");
  }
  static std::string Message(const HttpResponse& r) {
    return Body(r)["error"].value("message", std::string());
  }
};

TEST_F(SignIn, ACodeBecomesASessionThatActsAsItsUser) {
  HttpResponse issued = As(token_, "POST", "/api/v1/auth/signin-codes");
  ASSERT_EQ(issued.status, 201) << issued.body;
  Json code = Body(issued);
  EXPECT_EQ(code["user"], "ada");
  EXPECT_EQ(code["url"], "http://gpu-master:7420/#signin=" + code["code"].get<std::string>());
  std::string session = Session(code["code"]);
  ASSERT_TRUE(session.starts_with("cohs_")) << session;
  HttpResponse me = As(session, "GET", "/api/v1/whoami");
  ASSERT_EQ(me.status, 200) << me.body;
  EXPECT_EQ(Body(me)["name"], "ada");
  EXPECT_TRUE(Body(me).contains("session_expires_at"));
  // What ada's token may do, and may not, her session may and may not.
  const std::string job =
      R"({"name": "t", "team": "default", "tasks": [{"role": "worker", "command": ["true"]}]})";
  EXPECT_EQ(As(session, "POST", "/api/v1/jobs", job).status, 201);
  for (const char* path : {"/api/v1/users", "/api/v1/audit", "/api/v1/jobs", "/api/v1/tokens"}) {
    EXPECT_EQ(As(session, "GET", path).status, As(token_, "GET", path).status) << path;
  }
  // A session can ask for a code for another tab or browser, as a token can.
  EXPECT_FALSE(Code(session).empty());
}

TEST_F(SignIn, ACodeWorksOnceAndNotAfterItExpires) {
  std::string code = Code(token_);
  ASSERT_EQ(Exchange(code).status, 201);
  HttpResponse again = Exchange(code);
  EXPECT_EQ(again.status, 401);
  EXPECT_NE(Message(again).find("used already"), std::string::npos) << again.body;
  std::string late = Code(token_);
  clock_.Advance(minutes(2));
  HttpResponse expired = Exchange(late);
  EXPECT_EQ(expired.status, 401);
  EXPECT_NE(Message(expired).find("expired"), std::string::npos) << expired.body;
  EXPECT_NE(Message(expired).find("cohort dashboard"), std::string::npos) << expired.body;
  HttpResponse bad = As("", "POST", "/api/v1/auth/sessions", R"({"code": 7})");
  EXPECT_EQ(bad.status, 400) << bad.body;
}

TEST_F(SignIn, SigningOutRevokesTheSessionOnly) {
  std::string first = Session(Code(token_));
  std::string second = Session(Code(token_));
  HttpResponse out = As(first, "DELETE", "/api/v1/auth/sessions/current");
  ASSERT_EQ(out.status, 200) << out.body;
  HttpResponse after = As(first, "GET", "/api/v1/whoami");
  EXPECT_EQ(after.status, 401);
  EXPECT_NE(Message(after).find("signed out"), std::string::npos) << after.body;
  EXPECT_EQ(As(second, "GET", "/api/v1/whoami").status, 200);
  EXPECT_EQ(As(token_, "GET", "/api/v1/whoami").status, 200);
  // A token is not a session: nothing to sign out.
  EXPECT_EQ(As(token_, "DELETE", "/api/v1/auth/sessions/current").status, 409);
}

TEST_F(SignIn, ASessionEndsWhenItExpiresOrItsUserIsDeleted) {
  std::string session = Session(Code(token_));
  clock_.Advance(hours(12) - seconds(1));
  EXPECT_EQ(As(session, "GET", "/api/v1/whoami").status, 200);
  clock_.Advance(seconds(1));
  HttpResponse expired = As(session, "GET", "/api/v1/whoami");
  EXPECT_EQ(expired.status, 401);
  EXPECT_NE(Message(expired).find("expired"), std::string::npos) << expired.body;

  ASSERT_TRUE(master_->accounts().CreateUser(User{"root", true, {}, {}, {}, {}, {}}).ok());
  std::string root = master_->accounts().Issue(TokenKind::kUser, "root", "test")->token;
  std::string ada = Session(Code(token_));
  ASSERT_EQ(As(root, "DELETE", "/api/v1/users/ada").status, 200);
  ASSERT_TRUE(master_->accounts()
                  .CreateUser(User{"ada", false, {{"default", TeamRole::kMember}}, {}, {}, {}, {}})
                  .ok());
  // The new ada is not the old one: the old one's session does not sign her in.
  EXPECT_EQ(As(ada, "GET", "/api/v1/whoami").status, 401);
}

TEST_F(SignIn, UnusedCodesOfAUserAreCapped) {
  for (int i = 0; i < 5; ++i) ASSERT_FALSE(Code(token_).empty());
  HttpResponse sixth = As(token_, "POST", "/api/v1/auth/signin-codes");
  EXPECT_EQ(sixth.status, 429) << sixth.body;
  EXPECT_NE(Message(sixth).find("unused sign-in codes"), std::string::npos) << sixth.body;
}

TEST_F(SignIn, NoCodeNorSessionReachesTheAudit) {
  ASSERT_TRUE(master_->accounts().CreateUser(User{"root", true, {}, {}, {}, {}, {}}).ok());
  std::string code = Code(token_);
  std::string session = Session(code);
  ASSERT_EQ(Exchange(code).status, 401);
  ASSERT_EQ(As(session, "DELETE", "/api/v1/auth/sessions/current").status, 200);
  auto entries = master_->audit().Read(
      state::AuditQuery{FromMicros(0), FromMicros(INT64_MAX), "", 10'000, ""});
  ASSERT_TRUE(entries.ok());
  bool signed_out = false;
  for (const auto& e : *entries) {
    std::string text =
        e.user + " " + e.remote + " " + e.method + " " + e.path + " " + e.target + " " + e.outcome;
    EXPECT_EQ(text.find(code.substr(5)), std::string::npos) << text;
    EXPECT_EQ(text.find(session.substr(5)), std::string::npos) << text;
    signed_out |= e.user == "ada" && e.path == "/api/v1/auth/sessions/current";
  }
  EXPECT_TRUE(signed_out) << "the sign-out is audited, naming its user";
}

}  // namespace
}  // namespace cohort::api
