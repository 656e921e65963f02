// The audit log as the API writes it, and the accounting and audit routes: the real ApiServer
// and Master over SQLite (behind a FailingStateStore), served without a socket.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <deque>
#include <filesystem>
#include <thread>

#include "api/api_server.h"
#include "api/audit_hook.h"
#include "api/hand_run_loop.h"
#include "common/units.h"
#include "model/json.h"
#include "scheduler/scheduler.h"
#include "store/content_hash.h"
#include "testing/failing_state_store.h"
#include "testing/master_deps.h"

namespace cohort::api {
namespace {

namespace fs = std::filesystem;
using Call = cohort::testing::FailingStateStore::Call;
using ::testing::HasSubstr;

class AuditApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cohort-audit-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    clock_.Set(*ParseTimestamp("2026-11-02T10:00:00Z"));
    auto sqlite = state::OpenSqliteStateStore((dir_ / "cohort.db").string());
    ASSERT_TRUE(sqlite.ok()) << sqlite.status().ToString();
    auto store = std::make_unique<cohort::testing::FailingStateStore>(std::move(sqlite).value());
    store_ = store.get();
    master::MasterConfig config;
    config.data_dir = dir_.string();
    config.fail_stop = [](const Status& s) { FAIL() << "fail stop: " << s.ToString(); };
    auto m = master::Master::Create(
        config,
        cohort::testing::TestMasterDeps(config.data_dir, std::move(store),
                                        scheduler::NewScheduler(scheduler::SchedulerConfig{})),
        clock_, loop_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    master_ = std::move(m).value();
    api_ = std::make_unique<ApiServer>(ioc_, *master_);
    for (const char* name : {"ada", "bob", "cy"}) {
      ASSERT_TRUE(master_->accounts().CreateUser(User{name, true, {}, {}, {}, {}, {}}).ok());
      tokens_[name] = master_->accounts().Issue(TokenKind::kUser, name, "test")->token;
    }
    tokens_["join"] = master_->accounts().Issue(TokenKind::kJoin, "", "test")->token;
  }

  void TearDown() override {
    api_.reset();
    master_.reset();
    fs::remove_all(dir_);
  }

  HttpResponse Serve(std::string method, std::string path, std::string body = "",
                     std::map<std::string, std::string> headers = {{"x-cohort-user", "ada"}},
                     std::map<std::string, std::string> query = {}) {
    HttpRequest request;
    request.method = std::move(method);
    request.path = std::move(path);
    request.query = std::move(query);
    // "x-cohort-user: NAME" stands for NAME's token: a user, "join" (the join token) or
    // "node:n1" (the credential n1 got when it joined).
    if (auto as = headers.find("x-cohort-user"); as != headers.end()) {
      headers["authorization"] = "Bearer " + tokens_[as->second];
      headers.erase(as);
    }
    const bool joining = request.path == "/api/v1/agents/register";
    request.headers = std::move(headers);
    request.body = std::move(body);
    request.remote = "10.1.2.3:45678";
    auto recorder = std::make_shared<RecordingResponder>();
    clock_.Advance(std::chrono::seconds(1));
    api_->Handle(std::move(request), recorder);
    loop_.RunPosted();
    // A log upload is answered from the log store's writer thread, through the io_context.
    for (int i = 0; i < 500 && recorder->answers == 0; ++i) {
      ioc_.restart();
      ioc_.poll();
      if (recorder->answers == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(recorder->answers, 1);
    if (joining && recorder->response.status == 200) {
      Json answer = Body(recorder->response);
      tokens_["node:" + answer["node_id"].get<std::string>()] = answer["credential"];
    }
    return recorder->response;
  }

  Json Body(const HttpResponse& r) {
    auto doc = ParseJson(r.body);
    EXPECT_TRUE(doc.ok()) << r.body;
    return doc.ok() ? *doc : Json();
  }

  std::vector<state::AuditEntry> Entries() {
    auto entries = master_->audit().Read(
        state::AuditQuery{FromMicros(0), FromMicros(INT64_MAX), "", 10'000, ""});
    EXPECT_TRUE(entries.ok());
    return entries.ok() ? *entries : std::vector<state::AuditEntry>{};
  }

  // The registration an agent on `id` sends.
  static std::string NodeBody(const std::string& id) {
    NodeInfo info;
    info.id = id;
    info.instance = "first";
    info.address = "127.0.0.1";
    info.milli_cpus = 8000;
    info.memory_bytes = 16LL << 30;
    info.gpus.push_back(Gpu{0, "GPU-0", "H100", 80LL << 30, "", 0});
    info.ports = PortRange{31000, 31009};
    return ToJson(info).dump();
  }

  static constexpr const char* kSpec =
      "name: audited\n"
      "tasks:\n"
      "  - role: main\n"
      "    resources: {gpus: 1}\n"
      "    command: [\"true\"]\n"
      "    env: {API_KEY: hunter2}\n";

  fs::path dir_;
  ManualClock clock_;
  boost::asio::io_context ioc_;
  HandRunLoop loop_;
  cohort::testing::FailingStateStore* store_ = nullptr;
  std::unique_ptr<master::Master> master_;
  std::unique_ptr<ApiServer> api_;
  std::map<std::string, std::string> tokens_;
};

TEST_F(AuditApiTest, EveryStateChangingRouteLeavesOneEntryWithItsFields) {
  struct Step {
    std::string method, path, body;
    int status;
    std::string user, target;
  };
  std::vector<Step> steps = {
      {"PUT", "/api/v1/teams/vision", R"({"guaranteed_gpus": 1})", 200, "ada", "team vision"},
      {"POST", "/api/v1/agents/register", NodeBody("n1"), 200, "(join token)", "node n1"},
      {"POST", "/api/v1/jobs", kSpec, 201, "ada", "job 1"},
      {"POST", "/api/v1/jobs/1/kill", "", 200, "ada", "job 1"},
      {"POST", "/api/v1/nodes/n1/drain", R"({"reason": "disk"})", 200, "ada", "node n1"},
      {"POST", "/api/v1/nodes/n1/undrain", "", 200, "ada", "node n1"},
      {"DELETE", "/api/v1/nodes/n1", "", 200, "ada", "node n1"},
      {"DELETE", "/api/v1/teams/vision", "", 200, "ada", "team vision"},
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    SCOPED_TRACE(step.method + " " + step.path);
    Timestamp at = clock_.Now() + std::chrono::seconds(1);  // Serve moves the clock first
    HttpResponse r = Serve(step.method, step.path, step.body,
                           {{"x-cohort-user", step.user == "(join token)" ? "join" : "ada"},
                            {"x-api-key", "s3cr3t-t0ken"}});
    EXPECT_EQ(r.status, step.status) << r.body;
    auto entries = Entries();
    ASSERT_EQ(entries.size(), i + 1);  // one entry per call
    const state::AuditEntry& e = entries.back();
    EXPECT_EQ(e.time, at);
    EXPECT_EQ(e.user, step.user);
    EXPECT_EQ(e.remote, "10.1.2.3:45678");
    EXPECT_EQ(e.method, step.method);
    EXPECT_EQ(e.path, step.path);
    EXPECT_EQ(e.target, step.target);
    EXPECT_EQ(e.status, std::optional<int>(step.status));
    EXPECT_EQ(e.outcome, "");
  }
  // Nothing of a body, a header value or an environment is kept.
  for (const auto& e : Entries()) {
    for (const auto& text : {e.user, e.remote, e.method, e.path, e.target, e.outcome}) {
      EXPECT_THAT(text, ::testing::Not(HasSubstr("hunter2")));
      EXPECT_THAT(text, ::testing::Not(HasSubstr("s3cr3t")));
      EXPECT_THAT(text, ::testing::Not(HasSubstr("disk")));
    }
  }
}

TEST_F(AuditApiTest, ReadsAgentSyncsLogUploadsAndDatasetChunksLeaveNoEntry) {
  ASSERT_EQ(
      Serve("POST", "/api/v1/agents/register", NodeBody("n1"), {{"x-cohort-user", "join"}}).status,
      200);
  ASSERT_EQ(Serve("POST", "/api/v1/jobs", kSpec).status, 201);
  ASSERT_EQ(Entries().size(), 2u);
  EXPECT_EQ(Serve("GET", "/api/v1/jobs").status, 200);
  EXPECT_EQ(Serve("GET", "/api/v1/jobs/1").status, 200);
  EXPECT_EQ(Serve("GET", "/api/v1/health").status, 200);
  EXPECT_EQ(Serve("GET", "/api/v1/usage").status, 200);
  EXPECT_EQ(Serve("GET", "/api/v1/audit").status, 200);
  EXPECT_EQ(Serve("GET", "/api/v1/nowhere").status, 404);
  EXPECT_EQ(Serve("HEAD", "/api/v1/jobs").status, 405);
  EXPECT_EQ(Serve("POST", "/api/v1/agents/n1/sync", R"({"applied_version": 0, "tasks": []})",
                  {{"x-cohort-user", "node:n1"}})
                .status,
            200);
  EXPECT_NE(Serve("POST", "/api/v1/agents/n1/logs/1.1.main.0", "output",
                  {{"x-cohort-user", "node:n1"}}, {{"offset", "0"}})
                .status,
            0);
  // A dataset's chunks, asked about and uploaded by the thousand: the commit naming them is
  // what the audit keeps.
  const std::string sha = *store::Sha256Hex("chunk");
  EXPECT_EQ(Serve("POST", "/api/v1/blobs/missing", Json{{"sha256", {sha}}}.dump()).status, 200);
  EXPECT_EQ(Serve("PUT", "/api/v1/blobs/" + sha, "chunk").status, 201);
  EXPECT_EQ(Entries().size(), 2u);
  const Json files = Json::array({{{"path", "c"},
                                   {"size", 5},
                                   {"sha256", sha},
                                   {"chunks", {{{"sha256", sha}, {"size", 5}}}}}});
  EXPECT_EQ(Serve("POST", "/api/v1/datasets/d/versions", Json{{"files", files}}.dump()).status,
            201);
  auto entries = Entries();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries.back().path, "/api/v1/datasets/d/versions");
}

TEST_F(AuditApiTest, RefusedCallsAreRecordedWithTheirStatusAndWhy) {
  HttpResponse missing = Serve("POST", "/api/v1/jobs/99/kill");
  EXPECT_EQ(missing.status, 404);
  HttpResponse bad = Serve("POST", "/api/v1/jobs", "name: [x\nsecret: hunter2");
  EXPECT_EQ(bad.status, 400);
  HttpResponse wrong = Serve("PUT", "/api/v1/jobs");
  EXPECT_EQ(wrong.status, 405);
  HttpResponse nowhere = Serve("POST", "/api/v2/anything");
  EXPECT_EQ(nowhere.status, 404);
  // Without a token: refused, and not recorded (a stranger cannot fill the audit log).
  HttpResponse anonymous = Serve("DELETE", "/api/v1/teams/none", "", {});
  EXPECT_EQ(anonymous.status, 401);
  // With a token that is refused: recorded, as such.
  HttpResponse forged =
      Serve("DELETE", "/api/v1/teams/none", "",
            {{"authorization", "Bearer coh_0123456789abcdef_" + std::string(43, 'x')}});
  EXPECT_EQ(forged.status, 401);
  auto entries = Entries();
  ASSERT_EQ(entries.size(), 5u);
  EXPECT_EQ(entries[0].status, std::optional<int>(404));
  EXPECT_EQ(entries[0].target, "job 99");
  EXPECT_EQ(entries[0].outcome, "not_found: job 99 does not exist");
  EXPECT_EQ(entries[1].status, std::optional<int>(400));
  EXPECT_EQ(entries[1].target, "");
  // The message would quote the body.
  EXPECT_EQ(entries[1].outcome,
            "invalid_argument (message not kept: it may quote the request body)");
  EXPECT_EQ(entries[2].status, std::optional<int>(405));
  EXPECT_THAT(entries[2].outcome, HasSubstr("PUT is not allowed on /api/v1/jobs"));
  EXPECT_EQ(entries[3].status, std::optional<int>(404));
  EXPECT_EQ(entries[3].path, "/api/v2/anything");
  EXPECT_EQ(entries[4].user, "(refused token)");
  EXPECT_EQ(entries[4].status, std::optional<int>(401));
  EXPECT_THAT(entries[4].outcome, HasSubstr("unauthenticated"));
}

// An error a handler returns (rather than one Handle finds before it) is answered once, through
// the audit entry, which keeps its status and why.
TEST_F(AuditApiTest, AnErrorAHandlerReturnsIsAnsweredThroughItsAuditEntry) {
  HttpResponse self = Serve("DELETE", "/api/v1/users/ada");
  EXPECT_EQ(self.status, 409);
  EXPECT_EQ(Body(self)["error"]["code"], "failed_precondition");
  HttpResponse bad_id = Serve("POST", "/api/v1/jobs/x/kill", "{}");
  EXPECT_EQ(bad_id.status, 400);
  auto entries = Entries();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].status, std::optional<int>(409));
  EXPECT_EQ(entries[0].outcome,
            "failed_precondition: an admin cannot delete themselves; another admin can");
  EXPECT_EQ(entries[1].status, std::optional<int>(400));
  EXPECT_THAT(entries[1].outcome, HasSubstr("invalid_argument"));
}

TEST_F(AuditApiTest, ACallWhoseEntryCannotBeWrittenIsRefusedAndChangesNothing) {
  store_->SetInjectedError(Status::ResourceExhausted("the state database's disk is full"));
  store_->FailNextWrites(1, {Call::kBeginAudit});
  HttpResponse refused = Serve("POST", "/api/v1/jobs", kSpec);
  EXPECT_EQ(refused.status, 507);
  EXPECT_THAT(Body(refused)["error"]["message"].get<std::string>(),
              HasSubstr("could not be recorded in the audit log"));
  EXPECT_EQ(store_->Calls(Call::kCreateJob), 0);  // the call did not run
  EXPECT_TRUE(master_->ListJobs({}).empty());
  EXPECT_TRUE(Entries().empty());

  // Its outcome cannot be written: the change is made, but the client is told it failed, and
  // the entry stays, without an outcome.
  store_->SetInjectedError(Status::Internal("injected failure"));
  store_->FailNextWrites(1, {Call::kFinishAudit});
  HttpResponse unfinished = Serve("PUT", "/api/v1/teams/vision", R"({"guaranteed_gpus": 1})");
  EXPECT_EQ(unfinished.status, 500);
  EXPECT_THAT(Body(unfinished)["error"]["message"].get<std::string>(),
              HasSubstr("carried out, but its audit entry could not be completed"));
  auto entries = Entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].path, "/api/v1/teams/vision");
  EXPECT_EQ(entries[0].status, std::nullopt);
  EXPECT_EQ(Serve("GET", "/api/v1/teams/vision").status, 200);
}

TEST_F(AuditApiTest, AuditQueryFiltersByTimeAndUserNewestLast) {
  Timestamp start = clock_.Now();
  for (const char* user : {"ada", "bob", "ada", "cy"}) {
    Serve("POST", "/api/v1/jobs/99/kill", "", {{"x-cohort-user", user}});
  }
  auto users = [&](std::map<std::string, std::string> query) {
    HttpResponse r =
        Serve("GET", "/api/v1/audit", "", {{"x-cohort-user", "ada"}}, std::move(query));
    EXPECT_EQ(r.status, 200) << r.body;
    Json doc = Body(r);
    std::vector<std::string> out;
    for (const auto& e : doc["entries"]) out.push_back(e["user"].get<std::string>());
    if (doc["more"].get<bool>()) out.push_back("(more)");
    return out;
  };
  EXPECT_EQ(users({}), (std::vector<std::string>{"ada", "bob", "ada", "cy"}));
  EXPECT_EQ(users({{"user", "ada"}}), (std::vector<std::string>{"ada", "ada"}));
  EXPECT_EQ(users({{"limit", "2"}}), (std::vector<std::string>{"ada", "cy", "(more)"}));
  // The calls were at start+1s .. start+4s.
  std::string second = FormatTimestamp(start + std::chrono::seconds(2));
  std::string fourth = FormatTimestamp(start + std::chrono::seconds(4));
  EXPECT_EQ(users({{"since", second}, {"until", fourth}}),
            (std::vector<std::string>{"bob", "ada"}));
  EXPECT_EQ(users({{"since", "2026-11-02"}, {"user", "ada"}}),
            (std::vector<std::string>{"ada", "ada"}));
  EXPECT_TRUE(users({{"since", "1s"}}).empty());  // a second ago: only this question since

  HttpResponse r =
      Serve("GET", "/api/v1/audit", "", {{"x-cohort-user", "ada"}}, {{"since", "2026-11-02"}});
  Json entry = Body(r)["entries"][0];
  EXPECT_EQ(entry["method"], "POST");
  EXPECT_EQ(entry["path"], "/api/v1/jobs/99/kill");
  EXPECT_EQ(entry["remote"], "10.1.2.3:45678");
  EXPECT_EQ(entry["target"], "job 99");
  EXPECT_EQ(entry["status"], 404);
  EXPECT_TRUE(entry["seq"].is_number_integer());
  EXPECT_EQ(entry["time"], FormatTimestamp(start + std::chrono::seconds(1)));

  for (auto [name, value, why] :
       {std::tuple{"limit", "0", "limit: \"0\" is not an integer from 1 to 10000"},
        {"limit", "10001", "from 1 to 10000"},
        {"since", "yesterday", "since: \"yesterday\" is not a time"},
        {"users", "ada", "users: unknown query parameter"}}) {
    HttpResponse bad =
        Serve("GET", "/api/v1/audit", "", {{"x-cohort-user", "ada"}}, {{name, value}});
    EXPECT_EQ(bad.status, 400) << name;
    EXPECT_THAT(Body(bad)["error"]["message"].get<std::string>(), HasSubstr(why));
  }
}

// cohort audit --job: the calls about one job, with who made them; and its events name the
// killer too.
TEST_F(AuditApiTest, AuditQueryFiltersByJobAndTheJobsEventsNameWhoKilledIt) {
  HttpResponse submitted = Serve("POST", "/api/v1/jobs", kSpec);
  ASSERT_EQ(submitted.status, 201) << submitted.body;
  const std::string id = std::to_string(Body(submitted)["id"].get<int64_t>());
  Serve("POST", "/api/v1/jobs/99/kill", "", {{"x-cohort-user", "cy"}});
  ASSERT_EQ(Serve("POST", "/api/v1/jobs/" + id + "/kill", "", {{"x-cohort-user", "bob"}}).status,
            200);
  HttpResponse r = Serve("GET", "/api/v1/audit", "", {{"x-cohort-user", "ada"}}, {{"job", id}});
  ASSERT_EQ(r.status, 200) << r.body;
  const Json doc = Body(r);
  std::vector<std::string> calls;
  for (const auto& e : doc["entries"]) {
    calls.push_back(fmt::format("{} {} {} {}", e["user"].get<std::string>(),
                                e["method"].get<std::string>(), e["path"].get<std::string>(),
                                e["target"].get<std::string>()));
  }
  EXPECT_EQ(calls, (std::vector<std::string>{"ada POST /api/v1/jobs job " + id,
                                             "bob POST /api/v1/jobs/" + id + "/kill job " + id}));

  HttpResponse events = Serve("GET", "/api/v1/jobs/" + id + "/events");
  ASSERT_EQ(events.status, 200) << events.body;
  Json last = Body(events)["events"].back();
  EXPECT_EQ(last["message"], "killed while pending by user bob");

  HttpResponse bad = Serve("GET", "/api/v1/audit", "", {{"x-cohort-user", "ada"}}, {{"job", "x"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(Body(bad)["error"]["message"].get<std::string>(),
              HasSubstr("job: \"x\" is not a job id"));
}

TEST_F(AuditApiTest, UsageAnswersWithRowsAndTotalAndRefusesBadParameters) {
  ASSERT_EQ(
      Serve("POST", "/api/v1/agents/register", NodeBody("n1"), {{"x-cohort-user", "join"}}).status,
      200);
  ASSERT_EQ(Serve("POST", "/api/v1/jobs", kSpec).status, 201);  // placed at once on n1
  clock_.Advance(std::chrono::minutes(30));
  HttpResponse r = Serve("GET", "/api/v1/usage", "", {{"x-cohort-user", "ada"}},
                         {{"since", "2026-11-02"}, {"by", "day"}});
  ASSERT_EQ(r.status, 200) << r.body;
  Json doc = Body(r);
  EXPECT_EQ(doc["since"], "2026-11-02T00:00:00.000000Z");
  EXPECT_EQ(doc["by"], "day");
  EXPECT_TRUE(doc["team"].is_null());
  ASSERT_EQ(doc["rows"].size(), 1u);
  const Json& row = doc["rows"][0];
  EXPECT_EQ(row["period"], "2026-11-02");
  EXPECT_EQ(row["team"], "default");
  EXPECT_EQ(row["user"], "ada");
  EXPECT_EQ(row["jobs_submitted"], 1);
  EXPECT_EQ(row["attempts"], 1);
  EXPECT_EQ(row["queue_delay_max_s"], 0.0);
  // One GPU from its placement, as it was submitted, until now: 30 min and the second that
  // serving the question takes here.
  EXPECT_NEAR(row["gpu_hours"].get<double>(), 0.5 + 1.0 / 3600, 1e-12);
  EXPECT_EQ(doc["total"]["gpu_hours"], row["gpu_hours"]);

  for (auto [name, value, why] :
       {std::tuple{"by", "month", "by: \"month\" is not a period; use total, day or week"},
        {"since", "1x", "since: \"1x\" is not a time"},
        {"since", "now", "is not before until"},
        {"teams", "ml",
         "teams: unknown query parameter; this route takes team, user, since, "
         "until, by"}}) {
    HttpResponse bad =
        Serve("GET", "/api/v1/usage", "", {{"x-cohort-user", "ada"}}, {{name, value}});
    EXPECT_EQ(bad.status, 400) << name;
    EXPECT_THAT(Body(bad)["error"]["message"].get<std::string>(), HasSubstr(why)) << bad.body;
  }
}

}  // namespace
}  // namespace cohort::api
