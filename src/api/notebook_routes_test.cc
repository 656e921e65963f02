// A notebook through the master (api/notebook_routes.cc): the real ApiServer and Master, a
// notebook session running on a node whose "Jupyter" is one of Cohort's own HTTP servers on
// loopback that records what reaches it. Who is let in, by which link and cookie; what is
// forwarded (Jupyter's token, not the person's credentials) and what comes back (the banner).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "api/served_master_test_fixture.h"
#include "auth/job_credential.h"
#include "model/json.h"
#include "testing/free_port.h"

namespace cohort::api {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class NotebookRoutes : public ServedMaster {
 protected:
  void Configure(master::MasterConfig& config) override {
    config.job_credential_key = std::string(auth::kJobCredentialKeyBytes, 'k');
    key_ = config.job_credential_key;
  }

  void SetUp() override {
    ServedMaster::SetUp();
    ASSERT_TRUE(
        master_->accounts()
            .CreateUser(User{"root", true, {{"default", TeamRole::kMember}}, {}, {}, {}, {}})
            .ok());
    admin_token_ = master_->accounts().Issue(TokenKind::kUser, "root", "test")->token;
    port_ = testing::FreePort();
    NodeInfo node;
    node.id = "a";
    node.address = "127.0.0.1";
    node.milli_cpus = 32000;
    node.memory_bytes = int64_t{64} << 30;
    node.ports = PortRange{port_, port_ + 1};  // the second notebook's is never reached
    ASSERT_TRUE(master_->nodes().Register(node).ok());
    jupyter_ = std::make_unique<HttpServer>(
        ioc_,
        [this](HttpRequest request, std::shared_ptr<Responder> responder) {
          seen_.push_back(request);
          if (request.path.ends_with("/tree")) {
            return responder->Send(
                HttpResponse{200,
                             "text/html",
                             "<html><body><p>Files</p></body></html>",
                             {{"Set-Cookie", "_xsrf=2|abc; Path=/api/v1/jobs/1/notebook/"}}});
          }
          responder->Send(HttpResponse{201, "application/json", R"({"saved": true})"});
        },
        [](std::string_view, std::string_view) -> uint64_t { return 1 << 20; });
    ASSERT_TRUE(jupyter_->Listen("127.0.0.1", port_).ok());
  }
  void TearDown() override {
    jupyter_->Stop();
    ServedMaster::TearDown();
  }

  // A notebook session submitted by ada and running on node "a".
  JobId RunNotebook() {
    HttpResponse submitted =
        Serve("POST", "/api/v1/jobs", {},
              R"({"name": "nb", "session": {"kind": "notebook"}, "restart": {"on": []},
                  "tasks": [{"role": "notebook", "resources": {"cpus": 1}}]})");
    EXPECT_EQ(submitted.status, 201) << submitted.body;
    const JobId id = Body(submitted).value("id", JobId{0});
    EXPECT_TRUE(loop_.Settle(ioc_));
    ReportTasks(id, TaskState::kRunning);
    EXPECT_EQ((*master_->GetJob(id))->state, JobState::kRunning);
    return id;
  }
  // Node "a" reports every task of job `id` in `state`.
  void ReportTasks(JobId id, TaskState state) {
    const Job& job = **master_->GetJob(id);
    auto desired = master_->nodes().DesiredFor("a");
    ASSERT_TRUE(desired.ok());
    AgentReport report;
    report.applied_version = desired->version;
    std::optional<int> exit_code;
    if (state != TaskState::kRunning) exit_code = 143;
    for (const auto& t : job.tasks) {
      report.tasks.push_back(TaskReport{TaskId{id, job.attempt, t.role, t.index}, state, exit_code,
                                        std::nullopt, 100, clock_.Now(), std::nullopt});
    }
    ASSERT_TRUE(master_->nodes().Sync("a", report).ok());
    EXPECT_TRUE(loop_.Settle(ioc_));
  }

  // One request: `target` as a browser sends it, with these headers.
  HttpResponse Request(std::string method, std::string target,
                       std::map<std::string, std::string> headers = {}, std::string body = {}) {
    HttpRequest request;
    request.method = std::move(method);
    request.target = target;
    size_t q = target.find('?');
    request.path = PercentDecode(target.substr(0, q), false);
    if (q != std::string::npos) request.query = ParseQuery(target.substr(q + 1));
    request.headers = std::move(headers);
    request.headers.emplace("host", "gpu-master:7420");
    request.body = std::move(body);
    request.remote = "127.0.0.1:40000";
    auto recorder = std::make_shared<RecordingResponder>();
    api_->Handle(std::move(request), recorder);
    EXPECT_TRUE(loop_.SettleUntil(ioc_, [&] { return recorder->answers > 0; }));
    EXPECT_EQ(recorder->answers, 1);
    return recorder->response;
  }
  std::map<std::string, std::string> Bearer(const std::string& token) {
    return {{"authorization", "Bearer " + token}};
  }
  // The path of a new link to notebook `id`, asked for with `token`.
  std::string Link(JobId id) {
    HttpResponse r =
        Request("POST", fmt::format("/api/v1/jobs/{}/notebook-link", id), Bearer(token_));
    EXPECT_EQ(r.status, 201) << r.body;
    return Body(r).value("path", "");
  }
  // The cookie that opening `link` sets, as the browser sends it back.
  std::string Open(const std::string& link) {
    HttpResponse page = Request("GET", link);
    EXPECT_EQ(page.status, 200) << page.body;
    for (const auto& [name, value] : page.headers) {
      if (name == "Set-Cookie") return value.substr(0, value.find(';'));
    }
    ADD_FAILURE() << "no cookie set";
    return "";
  }
  static Json Body(const HttpResponse& r) {
    auto doc = ParseJson(r.body);
    return doc.ok() ? *doc : Json();
  }
  static std::string Header(const HttpResponse& r, std::string_view name) {
    for (const auto& [n, v] : r.headers) {
      if (n == name) return v;
    }
    return "";
  }

  std::string key_;
  std::string admin_token_;
  int port_ = 0;
  std::unique_ptr<HttpServer> jupyter_;
  std::vector<HttpRequest> seen_;  // what reached "Jupyter"
};

TEST_F(NotebookRoutes, ALinkLetsTheOwnersBrowserInAndJupyterSeesOnlyItsOwnToken) {
  const JobId id = RunNotebook();
  HttpResponse link =
      Request("POST", fmt::format("/api/v1/jobs/{}/notebook-link", id), Bearer(token_));
  ASSERT_EQ(link.status, 201) << link.body;
  const std::string path = Body(link)["path"];
  EXPECT_THAT(
      path, ::testing::StartsWith(fmt::format("/api/v1/jobs/{}/notebook/?cohort_link=cohc_", id)));
  EXPECT_EQ(Body(link)["url"], "http://gpu-master:7420" + path);

  HttpResponse page = Request("GET", path);
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_THAT(page.body, HasSubstr(fmt::format("url=/api/v1/jobs/{}/notebook/tree", id)));
  const std::string set_cookie = Header(page, "Set-Cookie");
  EXPECT_THAT(set_cookie, HasSubstr(fmt::format("Path=/api/v1/jobs/{}/notebook/", id)));
  EXPECT_THAT(set_cookie, HasSubstr("HttpOnly"));
  EXPECT_THAT(set_cookie, HasSubstr("SameSite=Strict"));
  EXPECT_EQ(Header(page, "Referrer-Policy"), "no-referrer");
  EXPECT_TRUE(seen_.empty()) << "the link is the master's: Jupyter never sees it";
  EXPECT_EQ(Request("GET", path).status, 401) << "a link opens once";

  const std::string cookie = set_cookie.substr(0, set_cookie.find(';'));
  HttpResponse tree = Request("GET", fmt::format("/api/v1/jobs/{}/notebook/tree?sort=name%20x", id),
                              {{"cookie", "_xsrf=2|abc; " + cookie + "; theme=dark"}});
  ASSERT_EQ(tree.status, 200) << tree.body;
  ASSERT_EQ(seen_.size(), 1u);
  const HttpRequest& forwarded = seen_.back();
  EXPECT_EQ(forwarded.target, fmt::format("/api/v1/jobs/{}/notebook/tree?sort=name%20x", id))
      << "the request line as the browser sent it";
  EXPECT_EQ(forwarded.headers.at("authorization"), "token " + auth::JobCredential(key_, id, 1));
  EXPECT_EQ(forwarded.headers.at("cookie"), "_xsrf=2|abc; theme=dark")
      << "the pass is the master's: Jupyter never sees it";
  // Jupyter's page, with Cohort's banner, and Jupyter's own cookie passed back.
  EXPECT_THAT(tree.body, HasSubstr("<p>Files</p>"));
  EXPECT_THAT(tree.body, HasSubstr(fmt::format(
                             "<script src=\"/api/v1/jobs/{}/notebook/cohort-session.js\"></script>"
                             "</body>",
                             id)));
  EXPECT_THAT(Header(tree, "Set-Cookie"), HasSubstr("_xsrf=2|abc"));

  // The notebook's root without its slash is Jupyter's root all the same.
  ASSERT_EQ(
      Request("GET", fmt::format("/api/v1/jobs/{}/notebook?x=1", id), {{"cookie", cookie}}).status,
      201);
  EXPECT_EQ(seen_.back().target, fmt::format("/api/v1/jobs/{}/notebook/?x=1", id));

  // The owner's token works too (a script); it is not forwarded either.
  HttpResponse saved =
      Request("PUT", fmt::format("/api/v1/jobs/{}/notebook/api/contents/a.ipynb", id),
              Bearer(token_), R"({"type": "notebook"})");
  EXPECT_EQ(saved.status, 201) << saved.body;
  EXPECT_EQ(seen_.back().headers.at("authorization"), "token " + auth::JobCredential(key_, id, 1));
  EXPECT_EQ(seen_.back().body, R"({"type": "notebook"})");
  EXPECT_THAT(saved.body, Not(HasSubstr("cohort-session.js"))) << "only HTML pages get the banner";
}

TEST_F(NotebookRoutes, OnlyTheOwnerWithAValidPassGetsIn) {
  const JobId id = RunNotebook();
  const std::string base = fmt::format("/api/v1/jobs/{}/notebook/", id);
  HttpResponse anonymous = Request("GET", base + "tree");
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_THAT(anonymous.body, HasSubstr(fmt::format("cohort notebook --open {}", id)));
  EXPECT_EQ(
      Request("GET", base + "tree", {{"cookie", "cohort_notebook=cohs_0123456789abcdef_x"}}).status,
      401);
  // Not even an admin: the pages would run ada's code in the admin's browser.
  HttpResponse admin = Request("GET", base + "tree", Bearer(admin_token_));
  EXPECT_EQ(admin.status, 403);
  EXPECT_THAT(Body(admin)["error"]["message"].get<std::string>(), HasSubstr("only its owner"));
  EXPECT_EQ(Request("POST", fmt::format("/api/v1/jobs/{}/notebook-link", id), Bearer(admin_token_))
                .status,
            403);
  // Another site's page may not write, nor open a kernel's socket.
  const std::string cookie = Open(Link(id));
  HttpResponse foreign = Request("POST", base + "api/kernels",
                                 {{"cookie", cookie}, {"origin", "https://evil.example"}});
  EXPECT_EQ(foreign.status, 403) << foreign.body;
  EXPECT_EQ(Request("POST", base + "api/kernels",
                    {{"cookie", cookie}, {"origin", "http://gpu-master:7420"}})
                .status,
            201);
  EXPECT_EQ(Request("GET", base + "files/../../2/notebook/tree", {{"cookie", cookie}}).status, 400);
  EXPECT_EQ(seen_.size(), 1u) << "only the one allowed request reached Jupyter";

  // A pass opens its own notebook only.
  const JobId other = RunNotebook();
  HttpResponse elsewhere =
      Request("GET", fmt::format("/api/v1/jobs/{}/notebook/tree", other), {{"cookie", cookie}});
  EXPECT_EQ(elsewhere.status, 401) << elsewhere.body;
  EXPECT_THAT(elsewhere.body, HasSubstr("another notebook"));
}

TEST_F(NotebookRoutes, LinksAreForRunningNotebooksOnly) {
  HttpResponse batch = Serve("POST", "/api/v1/jobs", {},
                             R"({"name": "b", "tasks": [{"role": "w", "command": ["true"],
                                 "resources": {"cpus": 1}}]})");
  ASSERT_EQ(batch.status, 201);
  const JobId batch_id = Body(batch)["id"];
  HttpResponse not_notebook =
      Request("POST", fmt::format("/api/v1/jobs/{}/notebook-link", batch_id), Bearer(token_));
  EXPECT_EQ(not_notebook.status, 409);
  EXPECT_THAT(not_notebook.body, HasSubstr("is not a notebook session"));
  EXPECT_EQ(Request("POST", "/api/v1/jobs/99/notebook-link", Bearer(token_)).status, 404);
  HttpResponse for_another = Request("POST", fmt::format("/api/v1/jobs/{}/notebook-link", batch_id),
                                     Bearer(token_), R"({"for": "bob"})");
  EXPECT_EQ(for_another.status, 400);
  EXPECT_THAT(for_another.body, HasSubstr("a link is for the caller only"));
  // A notebook that waits for a GPU node "a" does not have.
  HttpResponse waiting = Serve("POST", "/api/v1/jobs", {},
                               R"({"name": "nb", "session": {"kind": "notebook"},
                                   "tasks": [{"role": "notebook", "resources": {"gpus": 1}}]})");
  ASSERT_EQ(waiting.status, 201) << waiting.body;
  HttpResponse not_yet = Request(
      "POST", fmt::format("/api/v1/jobs/{}/notebook-link", Body(waiting)["id"].get<JobId>()),
      Bearer(token_));
  EXPECT_EQ(not_yet.status, 503);
  EXPECT_THAT(not_yet.body, HasSubstr("PENDING"));
}

TEST_F(NotebookRoutes, ThePageAsksForTheSessionsNoticesAndLearnsThatItEnded) {
  const JobId id = RunNotebook();
  const std::string cookie = Open(Link(id));
  const std::string notice = fmt::format("/api/v1/jobs/{}/notebook/cohort-session", id);
  HttpResponse quiet = Request("GET", notice, {{"cookie", cookie}});
  ASSERT_EQ(quiet.status, 200) << quiet.body;
  EXPECT_TRUE(Body(quiet)["notice"].is_null());
  api_->OnSessionNotice(id, "idle for 25m (no input): this session ends in 5m unless it is used");
  HttpResponse warned = Request("GET", notice, {{"cookie", cookie}});
  EXPECT_THAT(Body(warned)["notice"]["text"].get<std::string>(), HasSubstr("ends in 5m"));
  HttpResponse script = Request(
      "GET", fmt::format("/api/v1/jobs/{}/notebook/cohort-session.js", id), {{"cookie", cookie}});
  EXPECT_EQ(script.status, 200);
  EXPECT_THAT(script.content_type, HasSubstr("javascript"));
  EXPECT_THAT(script.body, HasSubstr("cohort-session"));
  EXPECT_TRUE(seen_.empty()) << "the banner is the master's";

  ASSERT_EQ(Request("POST", fmt::format("/api/v1/jobs/{}/kill", id), Bearer(token_)).status, 200);
  ReportTasks(id, TaskState::kKilled);
  ASSERT_EQ((*master_->GetJob(id))->state, JobState::kKilled);
  HttpResponse ended = Request("GET", notice, {{"cookie", cookie}});
  EXPECT_THAT(Body(ended)["notice"]["text"].get<std::string>(), HasSubstr("has ended"));
  EXPECT_EQ(
      Request("GET", fmt::format("/api/v1/jobs/{}/notebook/tree", id), {{"cookie", cookie}}).status,
      409);
}

}  // namespace
}  // namespace cohort::api
