// Every route of the API against every kind of caller (docs/security.md, "The route matrix"):
// each cell is a fresh master with the same users, teams, node and job, one request, and the
// status it must get.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "api/api_server.h"
#include "api/hand_run_loop.h"
#include "auth/token.h"
#include "master/master.h"
#include "model/json.h"
#include "scheduler/scheduler.h"
#include "store/content_hash.h"
#include "store/dataset_catalog.h"
#include "store/dataset_layout.h"
#include "store/directory_store.h"
#include "testing/master_deps.h"
#include "testing/memory_state_store.h"

namespace cohort::api {
namespace {

namespace fs = std::filesystem;

// The callers of the matrix, in its column order.
enum Caller { kAnonymous, kAdmin, kTeamAdmin, kMember, kViewer, kOutsider, kNode, kJoin, kCallers };
const char* kCallerNames[] = {"anonymous", "admin",    "team admin", "member",
                              "viewer",    "outsider", "node",       "join"};

// A master with: teams vision and nlp; users root (admin), tam (vision admin), mem (vision
// member), vic (vision viewer), out (nlp member), bob (vision member, owns job 1); node n1 with
// its credential; a join token; team vision's secret wandb.
class World {
 public:
  World() : dir_(fs::temp_directory_path() / ("cohort-access-" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    master::MasterConfig config;
    config.data_dir = dir_.string();
    config.fail_stop = [](const Status& s) { FAIL() << s.ToString(); };
    auto m = master::Master::Create(
        config, cohort::testing::TestMasterDeps(config.data_dir, disk_.Reopen()), clock_, loop_);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    master_ = std::move(m).value();
    api_ = std::make_unique<ApiServer>(ioc_, *master_);
    fs::create_directories(dir_ / "web");
    std::ofstream(dir_ / "web" / "index.html") << "<!doctype html><title>Cohort</title>";
    std::ofstream(dir_ / "web" / "app.js") << "console.log('cohort')";
    api_->ServeWebFrom((dir_ / "web").string());
    EXPECT_TRUE(master_->teams().Set(TeamQuota{"vision", 2, std::nullopt}).ok());
    EXPECT_TRUE(master_->teams().Set(TeamQuota{"nlp", 0, std::nullopt}).ok());
    auto& accounts = master_->accounts();
    auto user = [&](const std::string& name, bool admin, std::map<std::string, TeamRole> teams) {
      EXPECT_TRUE(accounts.CreateUser(User{name, admin, std::move(teams), {}, {}, {}, {}}).ok());
      return accounts.Issue(TokenKind::kUser, name, "test")->token;
    };
    tokens_[kAdmin] = user("root", true, {});
    tokens_[kTeamAdmin] = user("tam", false, {{"vision", TeamRole::kAdmin}});
    tokens_[kMember] = user("mem", false, {{"vision", TeamRole::kMember}});
    tokens_[kViewer] = user("vic", false, {{"vision", TeamRole::kViewer}});
    tokens_[kOutsider] = user("out", false, {{"nlp", TeamRole::kMember}});
    bob_token_ = user("bob", false, {{"vision", TeamRole::kMember}});
    bob_token_id_ = *auth::TokenId(bob_token_);
    tokens_[kJoin] = accounts.Issue(TokenKind::kJoin, "", "test")->token;
    // The node joins as an agent does, and job 1 runs on it.
    auto joined = Serve(kJoin, "POST", "/api/v1/agents/register", NodeJson("n1"));
    EXPECT_EQ(joined.status, 200) << joined.body;
    tokens_[kNode] = (*ParseJson(joined.body))["credential"].get<std::string>();
    EXPECT_TRUE(master_->secrets().Set(SecretScope::kTeam, "vision", "wandb", "team-value").ok());
    auto job = Serve(bob_token_, "POST", "/api/v1/jobs", JobSpecText());
    EXPECT_EQ(job.status, 201) << job.body;
    // Sweep 1 is bob's too, in team vision.
    auto sweep = Serve(bob_token_, "POST", "/api/v1/sweeps", SweepSpecText());
    EXPECT_EQ(sweep.status, 201) << sweep.body;
    // And an array of two jobs in team vision.
    auto array = Serve(bob_token_, "POST", "/api/v1/jobs",
                       R"({"name": "arr", "team": "vision", "array": {"indices": "0-1"}, )"
                       R"("tasks": [{"role": "w", "command": ["true"]}]})");
    EXPECT_EQ(array.status, 201) << array.body;
    array_id_ = (*ParseJson(array.body))["id"].get<JobId>();
    master_->Schedule();
    Settle();
    // An output of job 1, as its agent would have uploaded it.
    auto objects = store::OpenDirectoryStore((dir_ / "store").string());
    EXPECT_TRUE(objects.ok() && (*objects)->Put("jobs/1/outputs/out/model.txt", "weights").ok());
    // Team vision's private dataset imagenet:1, of one file, as `cohort data put` leaves it.
    EXPECT_TRUE((*objects)->Put(store::BlobKey(*store::Sha256Hex("weights")), "weights").ok());
    DatasetVersion imagenet;
    imagenet.name = "imagenet";
    imagenet.team = "vision";
    imagenet.user = "mem";
    auto files = DatasetFilesFromJson(*ParseJson(DatasetFiles()));
    EXPECT_TRUE(files.ok());
    imagenet.files = std::move(files).value();
    store::DatasetCatalog catalog(**objects);
    EXPECT_TRUE(catalog.Commit(std::move(imagenet), 0).ok());
  }

  // A dataset's files: one, "weights", in one chunk.
  static std::string DatasetFiles() {
    std::string sha = *store::Sha256Hex("weights");
    return Json::array({{{"path", "w.bin"},
                         {"size", 7},
                         {"sha256", sha},
                         {"chunks", Json::array({{{"sha256", sha}, {"size", 7}}})}}})
        .dump();
  }

  ~World() {
    api_->Stop();
    Settle();
    api_.reset();
    master_.reset();
    fs::remove_all(dir_);
  }

  static std::string NodeJson(const std::string& id) {
    NodeInfo info;
    info.id = id;
    info.address = "10.0.0.1";
    info.milli_cpus = 8000;
    info.memory_bytes = 64LL << 30;
    info.gpus = {Gpu{0, "GPU-0", "H100", 80LL << 30, "", 0},
                 Gpu{1, "GPU-1", "H100", 80LL << 30, "", 0}};
    info.instance = "i1";
    return ToJson(info).dump();
  }
  static std::string JobSpecText() {
    return R"({"name": "train", "team": "vision", "tasks": [{"role": "worker", "command": ["python3", "train.py"], "env": {"WANDB_API_KEY": "secret-value"}, "resources": {"gpus": 1}}]})";
  }

  static std::string SweepSpecText() {
    return R"({"name": "lr", "team": "vision", "trial": {"tasks": [{"role": "worker", "command": ["python3", "train.py", "${hp.lr}"], "resources": {"gpus": 0}}]}, "hyperparameters": {"lr": {"type": "categorical", "vals": [0.1, 0.01]}}, "searcher": {"name": "grid", "metric": "loss", "max_concurrent_trials": 1}})";
  }

  HttpResponse Serve(Caller caller, std::string method, std::string target, std::string body = {}) {
    return Serve(caller == kAnonymous ? std::string() : tokens_[caller], std::move(method),
                 std::move(target), std::move(body));
  }

  HttpResponse Serve(const std::string& token, std::string method, std::string target,
                     std::string body = {}) {
    return ServeRaw(token.empty() ? std::string() : "Bearer " + token, std::move(method),
                    std::move(target), std::move(body));
  }

  // With this Authorization header (none if empty).
  HttpResponse ServeRaw(const std::string& authorization, std::string method, std::string target,
                        std::string body = {}) {
    HttpRequest request;
    request.method = std::move(method);
    size_t q = target.find('?');
    request.path = target.substr(0, q);
    if (q != std::string::npos) request.query = ParseQuery(target.substr(q + 1));
    if (!authorization.empty()) request.headers["authorization"] = authorization;
    if (!accept_encoding.empty()) request.headers["accept-encoding"] = accept_encoding;
    request.body = std::move(body);
    request.remote = remote;
    auto recorder = std::make_shared<RecordingResponder>();
    api_->Handle(std::move(request), recorder);
    EXPECT_TRUE(loop_.SettleUntil(ioc_, [&] { return recorder->answers > 0; }))
        << "the loop never settles";
    EXPECT_EQ(recorder->answers, 1);
    authenticated = recorder->authenticated;
    return recorder->response;
  }

  std::string remote = "127.0.0.1:40000";
  bool authenticated = false;   // whether the last request's connection was marked so
  std::string accept_encoding;  // sent with every request when not empty
  std::string web_dir() const { return (dir_ / "web").string(); }
  master::Master& master() { return *master_; }
  ManualClock& clock() { return clock_; }
  const std::string& bob_token() const { return bob_token_; }
  const std::string& bob_token_id() const { return bob_token_id_; }
  JobId array_id() const { return array_id_; }
  const std::string& token(Caller c) { return tokens_[c]; }

 private:
  void Settle() { EXPECT_TRUE(loop_.Settle(ioc_)) << "the loop never settles"; }

  fs::path dir_;
  boost::asio::io_context ioc_;
  HandRunLoop loop_;
  ManualClock clock_;
  testing::MemoryStateStore disk_;
  std::unique_ptr<master::Master> master_;
  std::unique_ptr<ApiServer> api_;
  std::map<Caller, std::string> tokens_;
  std::string bob_token_;
  std::string bob_token_id_;
  JobId array_id_ = 0;
};

struct Cell {
  const char* method;
  const char* route;  // as the route table names it
  std::string target;
  std::string body;
  // One status per caller, in the order of Caller.
  std::array<int, kCallers> expected;
};

std::vector<Cell> Matrix() {
  const std::string report = R"({"applied_version": 0, "tasks": []})";
  // clang-format off
  //                                                                        anon adm  tadm mem  view out  node join
  return {
      {"GET", "/api/v1/health", "/api/v1/health", "",                       {200, 200, 200, 200, 200, 200, 200, 200}},
      {"GET", "/api/v1/whoami", "/api/v1/whoami", "",                       {401, 200, 200, 200, 200, 200, 403, 403}},
      {"POST", "/api/v1/jobs", "/api/v1/jobs", World::JobSpecText(),        {401, 201, 201, 201, 403, 403, 403, 403}},
      {"GET", "/api/v1/jobs", "/api/v1/jobs", "",                           {401, 200, 200, 200, 200, 200, 403, 403}},
      {"GET", "/api/v1/jobs/{id}", "/api/v1/jobs/1", "",                    {401, 200, 200, 200, 200, 200, 403, 403}},
      {"POST", "/api/v1/jobs/{id}/kill", "/api/v1/jobs/1/kill", "",         {401, 200, 200, 403, 403, 403, 403, 403}},
      // Only the owner and cluster admins; job 1 is no session, and the matrix sends no upgrade.
      {"GET", "/api/v1/jobs/{id}/terminal", "/api/v1/jobs/1/terminal", "",  {401, 400, 403, 403, 403, 403, 403, 403}},
      // A notebook is its owner's only, not even an admin's; job 1 is no notebook, and bob,
      // its owner, is none of these callers.
      {"POST", "/api/v1/jobs/{id}/notebook-link", "/api/v1/jobs/1/notebook-link", "",
                                                                            {401, 403, 403, 403, 403, 403, 403, 403}},
      {"GET", "/api/v1/jobs/{id}/notebook", "/api/v1/jobs/1/notebook", "", {401, 403, 403, 403, 403, 403, 403, 403}},
      {"GET", "/api/v1/jobs/{id}/notebook/{path...}", "/api/v1/jobs/1/notebook/tree", "",
                                                                            {401, 403, 403, 403, 403, 403, 403, 403}},
      {"POST", "/api/v1/jobs/{id}/notebook/{path...}", "/api/v1/jobs/1/notebook/api/kernels", "{}",
                                                                            {401, 403, 403, 403, 403, 403, 403, 403}},
      {"PUT", "/api/v1/jobs/{id}/notebook/{path...}", "/api/v1/jobs/1/notebook/api/contents/a.ipynb", "{}",
                                                                            {401, 403, 403, 403, 403, 403, 403, 403}},
      {"PATCH", "/api/v1/jobs/{id}/notebook/{path...}", "/api/v1/jobs/1/notebook/api/contents/a.ipynb", "{}",
                                                                            {401, 403, 403, 403, 403, 403, 403, 403}},
      {"DELETE", "/api/v1/jobs/{id}/notebook/{path...}", "/api/v1/jobs/1/notebook/api/contents/a.ipynb", "",
                                                                            {401, 403, 403, 403, 403, 403, 403, 403}},
      {"GET", "/api/v1/arrays/{id}", "/api/v1/arrays/ARRAY", "",            {401, 200, 200, 200, 200, 403, 403, 403}},
      {"POST", "/api/v1/arrays/{id}/kill", "/api/v1/arrays/ARRAY/kill", "", {401, 200, 200, 403, 403, 403, 403, 403}},
      {"POST", "/api/v1/sweeps", "/api/v1/sweeps", World::SweepSpecText(),  {401, 201, 201, 201, 403, 403, 403, 403}},
      {"GET", "/api/v1/sweeps", "/api/v1/sweeps", "",                       {401, 200, 200, 200, 200, 200, 403, 403}},
      {"GET", "/api/v1/sweeps/{id}", "/api/v1/sweeps/1", "",                {401, 200, 200, 200, 200, 403, 403, 403}},
      {"POST", "/api/v1/sweeps/{id}/kill", "/api/v1/sweeps/1/kill", "",     {401, 200, 200, 403, 403, 403, 403, 403}},
      {"POST", "/api/v1/sweeps/{id}/pause", "/api/v1/sweeps/1/pause", "",   {401, 200, 200, 403, 403, 403, 403, 403}},
      // Running, not paused: those who may change it learn that it cannot resume.
      {"POST", "/api/v1/sweeps/{id}/resume", "/api/v1/sweeps/1/resume", "", {401, 409, 409, 403, 403, 403, 403, 403}},
      {"GET", "/api/v1/jobs/{id}/events", "/api/v1/jobs/1/events", "",      {401, 200, 200, 200, 200, 403, 403, 403}},
      {"GET", "/api/v1/jobs/{id}/explain", "/api/v1/jobs/1/explain", "",    {401, 200, 200, 200, 200, 403, 403, 403}},
      {"GET", "/api/v1/queue", "/api/v1/queue", "",                         {401, 200, 200, 200, 200, 200, 403, 403}},
      {"GET", "/api/v1/jobs/{id}/logs", "/api/v1/jobs/1/logs", "",          {401, 200, 200, 200, 200, 403, 403, 403}},
      {"GET", "/api/v1/teams", "/api/v1/teams", "",                         {401, 200, 200, 200, 200, 200, 403, 403}},
      {"GET", "/api/v1/teams/{name}", "/api/v1/teams/vision", "",           {401, 200, 200, 200, 200, 200, 403, 403}},
      {"PUT", "/api/v1/teams/{name}", "/api/v1/teams/vision", R"({"guaranteed_gpus": 1})",
                                                                            {401, 200, 403, 403, 403, 403, 403, 403}},
      {"DELETE", "/api/v1/teams/{name}", "/api/v1/teams/nlp", "",           {401, 200, 403, 403, 403, 403, 403, 403}},
      {"GET", "/api/v1/teams/{name}/members", "/api/v1/teams/vision/members", "",
                                                                            {401, 200, 200, 200, 200, 200, 403, 403}},
      {"PUT", "/api/v1/teams/{name}/members/{user}", "/api/v1/teams/vision/members/out", R"({"role": "viewer"})",
                                                                            {401, 200, 200, 403, 403, 403, 403, 403}},
      {"DELETE", "/api/v1/teams/{name}/members/{user}", "/api/v1/teams/vision/members/bob", "",
                                                                            {401, 200, 200, 403, 403, 403, 403, 403}},
      {"GET", "/api/v1/users", "/api/v1/users", "",                         {401, 200, 403, 403, 403, 403, 403, 403}},
      {"POST", "/api/v1/users", "/api/v1/users", R"({"name": "new"})",      {401, 201, 403, 403, 403, 403, 403, 403}},
      {"GET", "/api/v1/users/{name}", "/api/v1/users/bob", "",              {401, 200, 403, 403, 403, 403, 403, 403}},
      {"PATCH", "/api/v1/users/{name}", "/api/v1/users/bob", R"({"admin": true})",
                                                                            {401, 200, 403, 403, 403, 403, 403, 403}},
      {"DELETE", "/api/v1/users/{name}", "/api/v1/users/bob", "",           {401, 200, 403, 403, 403, 403, 403, 403}},
      {"POST", "/api/v1/auth/signin-codes", "/api/v1/auth/signin-codes", "",
                                                                            {401, 201, 201, 201, 201, 201, 403, 403}},
      // A code is the credential here, whatever token comes with it.
      {"POST", "/api/v1/auth/sessions", "/api/v1/auth/sessions", R"({"code": "cohc_guess"})",
                                                                            {401, 401, 401, 401, 401, 401, 401, 401}},
      // Made with a token: no session to sign out.
      {"DELETE", "/api/v1/auth/sessions/current", "/api/v1/auth/sessions/current", "",
                                                                            {401, 409, 409, 409, 409, 409, 403, 403}},
      {"GET", "/api/v1/tokens", "/api/v1/tokens", "",                       {401, 200, 200, 200, 200, 200, 403, 403}},
      {"POST", "/api/v1/tokens", "/api/v1/tokens", "{}",                    {401, 201, 201, 201, 201, 201, 403, 403}},
      {"DELETE", "/api/v1/tokens/{id}", "/api/v1/tokens/BOB", "",           {401, 200, 404, 404, 404, 404, 403, 403}},
      {"GET", "/api/v1/usage", "/api/v1/usage", "",                         {401, 200, 200, 200, 200, 200, 403, 403}},
      {"GET", "/api/v1/audit", "/api/v1/audit", "",                         {401, 200, 403, 403, 403, 403, 403, 403}},
      {"GET", "/api/v1/secrets", "/api/v1/secrets", "",                     {401, 200, 200, 200, 200, 200, 403, 403}},
      {"PUT", "/api/v1/secrets/{name}", "/api/v1/secrets/hf", R"({"value": "v"})",
                                                                            {401, 200, 200, 200, 200, 200, 403, 403}},
      {"PUT", "/api/v1/secrets/{name}", "/api/v1/secrets/wandb", R"({"value": "v", "team": "vision"})",
                                                                            {401, 200, 200, 403, 403, 403, 403, 403}},
      {"DELETE", "/api/v1/secrets/{name}", "/api/v1/secrets/wandb?team=vision", "",
                                                                            {401, 200, 200, 403, 403, 403, 403, 403}},
      {"DELETE", "/api/v1/secrets/{name}", "/api/v1/secrets/wandb", "",     {401, 404, 404, 404, 404, 404, 403, 403}},
      {"GET", "/api/v1/nodes", "/api/v1/nodes", "",                         {401, 200, 200, 200, 200, 200, 403, 403}},
      {"POST", "/api/v1/nodes/{node}/drain", "/api/v1/nodes/n1/drain", "{}",{401, 200, 403, 403, 403, 403, 403, 403}},
      {"POST", "/api/v1/nodes/{node}/undrain", "/api/v1/nodes/n1/undrain", "",
                                                                            {401, 200, 403, 403, 403, 403, 403, 403}},
      {"DELETE", "/api/v1/nodes/{node}", "/api/v1/nodes/n1", "",            {401, 200, 403, 403, 403, 403, 403, 403}},
      {"POST", "/api/v1/agents/register", "/api/v1/agents/register", World::NodeJson("n1"),
                                                                            {401, 403, 403, 403, 403, 403, 200, 200}},
      {"POST", "/api/v1/agents/{node}/sync", "/api/v1/agents/n1/sync", report,
                                                                            {401, 403, 403, 403, 403, 403, 200, 403}},
      {"POST", "/api/v1/agents/{node}/logs/{task}", "/api/v1/agents/n1/logs/9.1.worker.0?offset=0", "x",
                                                                            {401, 403, 403, 403, 403, 403, 404, 403}},
      {"POST", "/api/v1/agents/{node}/metrics/{task}", "/api/v1/agents/n1/metrics/9.1.worker.0",
       R"({"points": []})",                                                  {401, 403, 403, 403, 403, 403, 404, 403}},
      {"GET", "/api/v1/events", "/api/v1/events", "",                       {401, 200, 200, 200, 200, 200, 403, 403}},
      {"GET", "/api/v1/jobs/{id}/metrics", "/api/v1/jobs/1/metrics", "",    {401, 200, 200, 200, 200, 403, 403, 403}},
      {"GET", "/api/v1/jobs/{id}/usage", "/api/v1/jobs/1/usage", "",        {401, 200, 200, 200, 200, 403, 403, 403}},
      {"GET", "/api/v1/jobs/{id}/artifacts", "/api/v1/jobs/1/artifacts", "",{401, 200, 200, 200, 200, 403, 403, 403}},
      // The world's store holds this output of job 1 (World()).
      {"GET", "/api/v1/jobs/{id}/artifacts/{path...}", "/api/v1/jobs/1/artifacts/out/model.txt", "",
                                                                            {401, 200, 200, 200, 200, 403, 403, 403}},
      // Datasets: team vision's private imagenet:1 (World()); chunks are anyone's who may submit.
      {"POST", "/api/v1/blobs/missing", "/api/v1/blobs/missing", R"({"sha256": []})",
                                                                            {401, 200, 200, 200, 200, 200, 403, 403}},
      {"PUT", "/api/v1/blobs/{sha256}", "/api/v1/blobs/" + *store::Sha256Hex("chunk"), "chunk",
                                                                            {401, 201, 201, 201, 403, 201, 403, 403}},
      {"GET", "/api/v1/datasets", "/api/v1/datasets", "",                   {401, 200, 200, 200, 200, 200, 403, 403}},
      // Another team's private dataset is not there for an outsider: 404, not 403.
      {"GET", "/api/v1/datasets/{name}", "/api/v1/datasets/imagenet?team=vision", "",
                                                                            {401, 200, 200, 200, 200, 404, 403, 403}},
      {"POST", "/api/v1/datasets/{name}/versions", "/api/v1/datasets/imagenet/versions?team=vision",
       R"({"files": )" + World::DatasetFiles() + "}",      {401, 201, 201, 201, 403, 403, 403, 403}},
      {"GET", "/api/v1/datasets/{name}/versions/{version}", "/api/v1/datasets/imagenet/versions/1?team=vision", "",
                                                                            {401, 200, 200, 200, 200, 404, 403, 403}},
      {"DELETE", "/api/v1/datasets/{name}/versions/{version}", "/api/v1/datasets/imagenet/versions/1?team=vision", "",
                                                                            {401, 200, 200, 200, 403, 404, 403, 403}},
      // A job's code, over the world's stored chunks: as for chunks.
      {"POST", "/api/v1/contexts", "/api/v1/contexts", R"({"files": )" + World::DatasetFiles() + "}",
                                                                            {401, 201, 201, 201, 403, 201, 403, 403}},
      {"GET", "/metrics", "/metrics", "",                                   {401, 200, 200, 200, 200, 200, 403, 403}},
      {"GET", "/", "/", "",                                                 {200, 200, 200, 200, 200, 200, 200, 200}},
      {"GET", "/assets/{file}", "/assets/app.js", "",                       {200, 200, 200, 200, 200, 200, 200, 200}},
  };
  // clang-format on
}

TEST(Access, EveryRouteAgainstEveryCaller) {
  std::set<std::pair<std::string, std::string>> covered;
  for (const Cell& cell : Matrix()) {
    covered.emplace(cell.method, cell.route);
    for (int c = 0; c < kCallers; ++c) {
      World world;
      std::string target = cell.target;
      if (auto at = target.find("BOB"); at != std::string::npos) {
        target.replace(at, 3, world.bob_token_id());
      }
      if (auto at = target.find("ARRAY"); at != std::string::npos) {
        target.replace(at, 5, std::to_string(world.array_id()));
      }
      HttpResponse r = world.Serve(static_cast<Caller>(c), cell.method, target, cell.body);
      EXPECT_EQ(r.status, cell.expected[c])
          << cell.method << " " << target << " as " << kCallerNames[c] << ": " << r.body;
      if (r.status == 401) {
        EXPECT_TRUE(std::any_of(r.headers.begin(), r.headers.end(),
                                [](const auto& h) { return h.first == "WWW-Authenticate"; }));
      }
    }
  }
  // Every route of the API is in the matrix: a new route must say who may call it.
  for (const auto& [method, pattern] : ApiServer::RouteList()) {
    EXPECT_TRUE(covered.count({std::string(method), std::string(pattern)}))
        << method << " " << pattern << " is not in the matrix";
  }
  EXPECT_EQ(covered.size(), ApiServer::RouteList().size());
}

// Which secrets each caller changes and lists; that no answer holds a value, while the agent
// of the node that runs the task gets it.
TEST(Access, SweepListsAreNewestFirstBoundedAndOnlyWhatTheCallerMayRead) {
  World world;
  for (int i = 0; i < 2; ++i) {  // sweeps 2 and 3, after the world's sweep 1
    ASSERT_EQ(
        world.Serve(world.bob_token(), "POST", "/api/v1/sweeps", World::SweepSpecText()).status,
        201);
  }
  auto ids = [](const HttpResponse& r) {
    std::vector<int64_t> out;
    const Json doc = *ParseJson(r.body);
    for (const auto& s : doc["sweeps"]) out.push_back(s["id"].get<int64_t>());
    return out;
  };
  HttpResponse page = world.Serve(kMember, "GET", "/api/v1/sweeps?limit=2");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(ids(page), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ((*ParseJson(page.body))["more"], true);
  // What each may do with bob's running sweep, as the routes decide.
  auto actions = [&](Caller c) {
    return (*ParseJson(world.Serve(c, "GET", "/api/v1/sweeps/1").body))["allowed_actions"];
  };
  EXPECT_EQ(actions(kAdmin), Json({"pause", "kill"}));
  EXPECT_EQ(actions(kTeamAdmin), Json({"pause", "kill"}));
  EXPECT_EQ(actions(kMember), Json::array());
  EXPECT_EQ(actions(kViewer), Json::array());
  ASSERT_EQ(world.Serve(kAdmin, "POST", "/api/v1/sweeps/1/pause").status, 200);
  EXPECT_EQ(actions(kTeamAdmin), Json({"resume", "kill"}));
  ASSERT_EQ(world.Serve(kAdmin, "POST", "/api/v1/sweeps/1/kill").status, 200);
  EXPECT_EQ(actions(kAdmin), Json::array());
  HttpResponse all = world.Serve(kMember, "GET", "/api/v1/sweeps");
  EXPECT_EQ(ids(all), (std::vector<int64_t>{3, 2, 1}));
  EXPECT_EQ((*ParseJson(all.body))["more"], false);
  EXPECT_TRUE(ids(world.Serve(kOutsider, "GET", "/api/v1/sweeps")).empty());
  EXPECT_TRUE(ids(world.Serve(kMember, "GET", "/api/v1/sweeps?team=nlp")).empty());
  for (const char* bad : {"limit=0", "limit=101", "limit=x", "state=RUNNING"}) {
    HttpResponse r = world.Serve(kMember, "GET", std::string("/api/v1/sweeps?") + bad);
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
  }
}

TEST(Access, SecretsAreChangedByTheirOwnersAndNeverReadBack) {
  World world;
  const std::string team_value = "vision-team-secret-7f3a";
  const std::string own_value = "mem-own-secret-91bc";
  auto set = [&](Caller c, const std::string& name, const std::string& body) {
    return world.Serve(c, "PUT", "/api/v1/secrets/" + name, body);
  };
  // A member cannot set the team's secret; its admin can; a cluster admin can too.
  HttpResponse member = set(kMember, "wandb", R"({"value": "x", "team": "vision"})");
  EXPECT_EQ(member.status, 403);
  EXPECT_NE(member.body.find("its admins and cluster admins may"), std::string::npos);
  EXPECT_EQ(set(kOutsider, "wandb", R"({"value": "x", "team": "vision"})").status, 403);
  HttpResponse team =
      set(kTeamAdmin, "wandb", R"({"value": ")" + team_value + R"(", "team": "vision"})");
  EXPECT_EQ(team.status, 200) << team.body;
  EXPECT_EQ(set(kAdmin, "nope", R"({"value": "x", "team": "nosuch"})").status, 404);
  HttpResponse own = set(kMember, "wandb", R"({"value": ")" + own_value + R"("})");
  EXPECT_EQ(own.status, 200) << own.body;
  // Bad requests name the field, and never echo the value.
  HttpResponse unknown = set(kMember, "x", R"({"value": "hunter2", "scope": "team"})");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.body.find("scope: unknown field"), std::string::npos) << unknown.body;
  HttpResponse broken = set(kMember, "x", R"({"value": hunter2})");
  EXPECT_EQ(broken.status, 400);
  HttpResponse empty = set(kMember, "x", R"({"value": ""})");
  EXPECT_EQ(empty.status, 400);
  EXPECT_NE(empty.body.find("value: must not be empty"), std::string::npos) << empty.body;
  EXPECT_EQ(set(kMember, "a..b%2F", R"({"value": "v"})").status, 400);
  EXPECT_EQ(set(kMember, "x", R"({"team": "vision"})").status, 400);
  for (const HttpResponse& r : {unknown, broken})
    EXPECT_EQ(r.body.find("hunter2"), std::string::npos);

  // Lists: one's own and one's teams', names only; another team's member sees none of them.
  HttpResponse mine = world.Serve(kMember, "GET", "/api/v1/secrets");
  EXPECT_NE(mine.body.find(R"("owner":"mem")"), std::string::npos) << mine.body;
  EXPECT_NE(mine.body.find(R"("owner":"vision")"), std::string::npos) << mine.body;
  EXPECT_NE(world.Serve(kViewer, "GET", "/api/v1/secrets").body.find(R"("owner":"vision")"),
            std::string::npos);
  EXPECT_EQ(world.Serve(kOutsider, "GET", "/api/v1/secrets").body, R"({"secrets":[]})");
  EXPECT_EQ(world.Serve(kAdmin, "GET", "/api/v1/secrets").body.find(R"("owner":"mem")"),
            std::string::npos);

  // A job naming the secret: its owner's own wins; the job shows the reference only.
  HttpResponse job = world.Serve(
      kMember, "POST", "/api/v1/jobs",
      R"({"name": "s", "team": "vision", "tasks": [{"role": "worker", "command": ["sh"], "resources": {"gpus": 1}, "env": {"WANDB_API_KEY": {"secret": "wandb"}}}]})");
  ASSERT_EQ(job.status, 201) << job.body;
  EXPECT_NE(job.body.find(R"("WANDB_API_KEY":{"secret":"wandb"})"), std::string::npos) << job.body;
  world.master().Schedule();
  HttpResponse sync = world.Serve(kNode, "POST", "/api/v1/agents/n1/sync",
                                  R"({"applied_version": 0, "tasks": []})");
  ASSERT_EQ(sync.status, 200);
  EXPECT_NE(sync.body.find(own_value), std::string::npos) << "the node's agent gets the value";
  EXPECT_EQ(sync.body.find(team_value), std::string::npos);
  for (Caller c : {kAdmin, kTeamAdmin, kMember, kViewer, kOutsider}) {
    const std::string id = std::to_string((*ParseJson(job.body))["id"].get<int64_t>());
    for (const std::string& target :
         {std::string("/api/v1/secrets"), std::string("/api/v1/jobs"), "/api/v1/jobs/" + id,
          "/api/v1/jobs/" + id + "/events", std::string("/api/v1/users/mem"),
          std::string("/api/v1/teams")}) {
      HttpResponse r = world.Serve(c, "GET", target);
      EXPECT_EQ(r.body.find(own_value), std::string::npos) << kCallerNames[c] << " " << target;
      EXPECT_EQ(r.body.find(team_value), std::string::npos) << kCallerNames[c] << " " << target;
    }
  }
  for (const HttpResponse& r : {team, own, mine}) {
    EXPECT_EQ(r.body.find(own_value), std::string::npos);
    EXPECT_EQ(r.body.find(team_value), std::string::npos);
  }

  // A reference to a secret nobody has is refused, naming the variable and what to do.
  HttpResponse missing = world.Serve(
      kMember, "POST", "/api/v1/jobs",
      R"({"name": "s", "team": "vision", "tasks": [{"role": "worker", "command": ["sh"], "env": {"HF_TOKEN": {"secret": "hf"}}}]})");
  EXPECT_EQ(missing.status, 400);
  EXPECT_NE(missing.body.find("tasks[0].env.HF_TOKEN: secret hf does not exist for user mem or "
                              "team vision; set it with `cohort secret set hf`"),
            std::string::npos)
      << missing.body;

  // A user's secrets go with the user.
  ASSERT_EQ(world.Serve(kAdmin, "DELETE", "/api/v1/users/mem").status, 200);
  EXPECT_TRUE(world.master().secrets().List(SecretScope::kUser, "mem").empty());
  EXPECT_EQ(world.master().secrets().ListTeams().size(), 1u);
}

// The dashboard's page and files need no token, hold no data, and come with headers that keep a
// browser from running anything else on the page; nothing outside the web directory is served.
TEST(Access, DashboardFilesArePublicAndConfined) {
  World world;
  HttpResponse page = world.Serve(kAnonymous, "GET", "/");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(page.body, "<!doctype html><title>Cohort</title>");
  auto header = [](const HttpResponse& r, const std::string& name) {
    for (const auto& [key, value] : r.headers) {
      if (key == name) return value;
    }
    return std::string();
  };
  HttpResponse script = world.Serve(kAnonymous, "GET", "/assets/app.js");
  ASSERT_EQ(script.status, 200);
  EXPECT_EQ(script.content_type, "text/javascript; charset=utf-8");
  for (const HttpResponse& r : {page, script}) {
    EXPECT_EQ(header(r, "Content-Security-Policy").rfind("default-src 'self'", 0), 0u);
    EXPECT_EQ(header(r, "X-Content-Type-Options"), "nosniff");
    EXPECT_EQ(header(r, "Cache-Control"), "no-cache");
  }
  // Paths as the server hands them over, decoded once: "%2e%2e" arrives as "..", "%2F" as "/".
  for (const char* path : {"/assets/..", "/assets/../cohort.db", "/assets/index.html/..",
                           "/assets/.hidden", "/assets/cohort.db", "/assets/x/../../cohort.db",
                           "/assets/%2e%2e", "/index.html", "/assets/", "/app.js"}) {
    HttpResponse r = world.Serve(kAnonymous, "GET", path);
    EXPECT_EQ(r.status, 404) << path << ": " << r.body;
  }
  EXPECT_EQ(world.Serve(kAnonymous, "POST", "/").status, 405);
}

// A file the build compressed (gzip -9 beside it, as web/build.mjs writes it) goes compressed to
// a client that takes gzip, and plain to one that does not; both answers say they vary so.
TEST(Access, DashboardFilesGoGzippedToClientsThatTakeGzip) {
  World world;
  const std::string script = world.web_dir() + "/app.js";
  ASSERT_EQ(std::system(("/usr/bin/gzip -k -9 " + script).c_str()), 0);
  std::ifstream in(script + ".gz", std::ios::binary);
  const std::string packed((std::istreambuf_iterator<char>(in)), {});
  ASSERT_EQ(packed.substr(0, 2), "\x1f\x8b");
  auto header = [](const HttpResponse& r, const std::string& name) {
    for (const auto& [key, value] : r.headers) {
      if (key == name) return value;
    }
    return std::string("(none)");
  };

  world.accept_encoding = "gzip, deflate, br";  // as Chromium asks
  HttpResponse gzipped = world.Serve(kAnonymous, "GET", "/assets/app.js");
  ASSERT_EQ(gzipped.status, 200);
  EXPECT_EQ(gzipped.body, packed);
  EXPECT_EQ(gzipped.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(header(gzipped, "Content-Encoding"), "gzip");
  EXPECT_EQ(header(gzipped, "Vary"), "Accept-Encoding");
  // index.html has no .gz beside it: plain, whatever the client takes.
  HttpResponse page = world.Serve(kAnonymous, "GET", "/");
  EXPECT_EQ(page.body, "<!doctype html><title>Cohort</title>");
  EXPECT_EQ(header(page, "Content-Encoding"), "(none)");

  for (const char* refusing : {"", "identity", "gzip;q=0, br", "br"}) {
    world.accept_encoding = refusing;
    HttpResponse plain = world.Serve(kAnonymous, "GET", "/assets/app.js");
    EXPECT_EQ(plain.body, "console.log('cohort')") << refusing;
    EXPECT_EQ(header(plain, "Content-Encoding"), "(none)") << refusing;
    EXPECT_EQ(header(plain, "Vary"), "Accept-Encoding") << refusing;
  }
  // The compressed file is not a name of its own.
  world.accept_encoding = "";
  EXPECT_EQ(world.Serve(kAnonymous, "GET", "/assets/app.js.gz").status, 404);
}

TEST(Access, OwnersChangeTheirOwnJobsAndReadThemselves) {
  World world;
  EXPECT_EQ(world.Serve(world.bob_token(), "GET", "/api/v1/users/bob").status, 200);
  EXPECT_EQ(world.Serve(world.bob_token(), "POST", "/api/v1/jobs/1/kill").status, 200);
  EXPECT_EQ(
      world.Serve(world.bob_token(), "DELETE", "/api/v1/tokens/" + world.bob_token_id()).status,
      200);
  // A revoked token is refused, saying so.
  HttpResponse r = world.Serve(world.bob_token(), "GET", "/api/v1/jobs");
  EXPECT_EQ(r.status, 401);
  EXPECT_NE(r.body.find("revoked"), std::string::npos) << r.body;
}

// A job that names no team goes to its submitter's team, never to the default team that
// they may not be in (issue 27, item 3).
TEST(Access, AJobThatNamesNoTeamGoesToTheSubmittersTeam) {
  World world;
  const std::string no_team =
      R"({"name": "mine", "tasks": [{"role": "w", "command": ["true"], "resources": {"gpus": 1}}]})";
  HttpResponse mem = world.Serve(kMember, "POST", "/api/v1/jobs", no_team);
  ASSERT_EQ(mem.status, 201) << mem.body;
  Json job = *ParseJson(mem.body);
  EXPECT_EQ(job["spec"]["team"], "vision");
  HttpResponse events =
      world.Serve(kMember, "GET", fmt::format("/api/v1/jobs/{}/events", job["id"].get<int64_t>()));
  EXPECT_NE(events.body.find("team vision: the spec names none"), std::string::npos) << events.body;
  Json me = *ParseJson(world.Serve(kMember, "GET", "/api/v1/whoami").body);
  EXPECT_EQ(me["job_team"], "vision");
  EXPECT_TRUE(me["default_team"].is_null());

  // A viewer only: told what to ask an admin for.
  HttpResponse vic = world.Serve(kViewer, "POST", "/api/v1/jobs", no_team);
  EXPECT_EQ(vic.status, 403);
  EXPECT_NE(vic.body.find("cohort team add-member TEAM vic"), std::string::npos) << vic.body;
  me = *ParseJson(world.Serve(kViewer, "GET", "/api/v1/whoami").body);
  EXPECT_TRUE(me["job_team"].is_null());
  EXPECT_NE(me["job_team_problem"].get<std::string>().find("cohort team add-member TEAM vic"),
            std::string::npos);

  // In two teams: refused, naming them, until an admin sets the default team.
  ASSERT_EQ(
      world.Serve(kAdmin, "PUT", "/api/v1/teams/nlp/members/mem", R"({"role": "member"})").status,
      200);
  HttpResponse two = world.Serve(kMember, "POST", "/api/v1/jobs", no_team);
  EXPECT_EQ(two.status, 400);
  EXPECT_NE(two.body.find("teams nlp, vision"), std::string::npos) << two.body;
  HttpResponse nope =
      world.Serve(kAdmin, "PATCH", "/api/v1/users/mem", R"({"default_team": "cv"})");
  EXPECT_EQ(nope.status, 400);
  EXPECT_NE(nope.body.find("default_team: no such team cv"), std::string::npos) << nope.body;
  HttpResponse set =
      world.Serve(kAdmin, "PATCH", "/api/v1/users/mem", R"({"default_team": "nlp"})");
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ((*ParseJson(set.body))["default_team"], "nlp");
  HttpResponse nlp = world.Serve(kMember, "POST", "/api/v1/jobs", no_team);
  ASSERT_EQ(nlp.status, 201) << nlp.body;
  EXPECT_EQ((*ParseJson(nlp.body))["spec"]["team"], "nlp");
  me = *ParseJson(world.Serve(kMember, "GET", "/api/v1/whoami").body);
  EXPECT_EQ(me["default_team"], "nlp");
  EXPECT_EQ(me["job_team"], "nlp");
  // Only admins set it.
  EXPECT_EQ(
      world.Serve(kMember, "PATCH", "/api/v1/users/mem", R"({"default_team": "vision"})").status,
      403);
}

TEST(Access, OutsidersSeeOtherTeamsJobsWithoutWhatTheyRun) {
  World world;
  for (const char* target : {"/api/v1/jobs/1", "/api/v1/jobs"}) {
    HttpResponse outsider = world.Serve(kOutsider, "GET", target);
    ASSERT_EQ(outsider.status, 200);
    EXPECT_EQ(outsider.body.find("secret-value"), std::string::npos) << outsider.body;
    EXPECT_EQ(outsider.body.find("train.py"), std::string::npos) << outsider.body;
    EXPECT_NE(outsider.body.find("\"redacted\":true"), std::string::npos) << outsider.body;
    EXPECT_NE(outsider.body.find("\"user\":\"bob\""), std::string::npos) << outsider.body;
    HttpResponse viewer = world.Serve(kViewer, "GET", target);
    EXPECT_NE(viewer.body.find("train.py"), std::string::npos) << viewer.body;
  }
  // Nor may they wait on it, which would answer with the whole job.
  HttpResponse wait =
      world.Serve(kOutsider, "GET", "/api/v1/jobs/1?wait_version=999&timeout_ms=1000");
  EXPECT_EQ(wait.status, 200);
  EXPECT_EQ(wait.body.find("train.py"), std::string::npos);
}

TEST(Access, ForgedAgentCallsAreRefused) {
  World world;
  // n2 joins and gets its own credential; with it, it cannot speak for n1.
  HttpResponse joined =
      world.Serve(kJoin, "POST", "/api/v1/agents/register", World::NodeJson("n2"));
  ASSERT_EQ(joined.status, 200);
  std::string n2 = (*ParseJson(joined.body))["credential"].get<std::string>();
  std::string report =
      R"({"applied_version": 1, "tasks": [{"id": {"job": 1, "attempt": 1, "role": "worker", "index": 0}, "state": "SUCCEEDED", "exit_code": 0}]})";
  EXPECT_EQ(world.Serve(n2, "POST", "/api/v1/agents/n1/sync", report).status, 403);
  EXPECT_EQ(world.Serve(n2, "POST", "/api/v1/agents/register", World::NodeJson("n1")).status, 403);
  EXPECT_EQ(world.Serve(n2, "POST", "/api/v1/agents/n1/logs/1.1.worker.0?offset=0", "x").status,
            403);
  EXPECT_EQ(world.master().GetJob(1).value()->state, JobState::kStarting);
  // A user's token is no agent's either, not even an admin's.
  EXPECT_EQ(world.Serve(kAdmin, "POST", "/api/v1/agents/n1/sync", report).status, 403);
  // Joining again under n1's name revokes n1's old credential.
  ASSERT_EQ(world.Serve(kJoin, "POST", "/api/v1/agents/register", World::NodeJson("n1")).status,
            200);
  EXPECT_EQ(world.Serve(kNode, "POST", "/api/v1/agents/n1/sync", report).status, 401);
}

TEST(Access, ANodeShipsLogsAndMetricsOnlyForItsOwnTasks) {
  World world;
  // Job 1 runs on n1; n2 joins, and with its own credential, under its own name, ships for it.
  HttpResponse joined =
      world.Serve(kJoin, "POST", "/api/v1/agents/register", World::NodeJson("n2"));
  ASSERT_EQ(joined.status, 200);
  std::string n2 = (*ParseJson(joined.body))["credential"].get<std::string>();
  HttpResponse log = world.Serve(n2, "POST", "/api/v1/agents/n2/logs/1.1.worker.0?offset=0", "x");
  EXPECT_EQ(log.status, 403) << log.body;
  EXPECT_NE(log.body.find("placed on n1"), std::string::npos) << log.body;
  EXPECT_EQ(
      world.Serve(n2, "POST", "/api/v1/agents/n2/metrics/1.1.worker.0", R"({"points": []})").status,
      403);
  // (n1's own appends are answered by the log writer: tests/integration ship them.)
}

TEST(Access, BadTokensAreRefusedWithoutSayingWhichPartWasWrong) {
  World world;
  std::string admin = world.token(kAdmin);
  std::string forged = admin;
  forged.back() = forged.back() == 'A' ? 'B' : 'A';
  for (const std::string& header : std::vector<std::string>{
           "Bearer " + forged, "Bearer coh_", "Basic cm9vdDpyb290", "Bearer " + admin + "x",
           "Bearer coh_ffffffffffffffff_" + std::string(43, 'a')}) {
    auto r = world.ServeRaw(header, "GET", "/api/v1/jobs");
    EXPECT_EQ(r.status, 401) << header;
    EXPECT_EQ(r.body.find(forged), std::string::npos);
  }
  // Expiry: a token made for an hour is refused after it.
  auto issued =
      world.master().accounts().Issue(TokenKind::kUser, "mem", "short", std::chrono::hours(1));
  ASSERT_TRUE(issued.ok());
  EXPECT_EQ(world.Serve(issued->token, "GET", "/api/v1/whoami").status, 200);
  world.clock().Advance(std::chrono::minutes(61));
  HttpResponse expired = world.Serve(issued->token, "GET", "/api/v1/whoami");
  EXPECT_EQ(expired.status, 401);
  EXPECT_NE(expired.body.find("expired"), std::string::npos) << expired.body;
}

// What keeps an agent's or a user's connection over a stranger's when connections run short
// (api/connection_slots.h): a valid credential of any kind, whatever the route answers.
TEST(Access, OnlyACallWithAValidCredentialMarksItsConnectionAuthenticated) {
  World world;
  for (Caller caller : {kAdmin, kViewer, kNode, kJoin}) {
    world.Serve(caller, "GET", "/api/v1/whoami");  // 403 for the node and the join token
    EXPECT_TRUE(world.authenticated) << kCallerNames[caller];
  }
  world.Serve(kAnonymous, "GET", "/api/v1/health");
  EXPECT_FALSE(world.authenticated) << "a public route with no token";
  std::string forged = world.token(kAdmin);
  forged.back() = forged.back() == 'A' ? 'B' : 'A';
  EXPECT_EQ(world.Serve(forged, "GET", "/api/v1/health").status, 401);
  EXPECT_FALSE(world.authenticated) << "a refused token";
}

TEST(Access, GuessingTokensIsSlowedDownPerAddress) {
  World world;
  world.remote = "203.0.113.9:5000";
  std::string guess = "coh_ffffffffffffffff_" + std::string(43, 'a');
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(world.Serve(guess, "GET", "/api/v1/jobs").status, 401) << i;
  }
  HttpResponse limited = world.Serve(guess, "GET", "/api/v1/jobs");
  EXPECT_EQ(limited.status, 429) << limited.body;
  EXPECT_TRUE(std::any_of(limited.headers.begin(), limited.headers.end(),
                          [](const auto& h) { return h.first == "Retry-After"; }));
  // While limited, a valid token from the same address is served all the same (an agent shares
  // its address with its tasks); guesses are still held back.
  world.remote = "203.0.113.9:5001";
  EXPECT_EQ(world.Serve(kMember, "GET", "/api/v1/jobs").status, 200);
  EXPECT_EQ(world.Serve(guess, "GET", "/api/v1/jobs").status, 429);
  // Other addresses are not held up; the health check needs no token.
  EXPECT_EQ(world.Serve(kAnonymous, "GET", "/api/v1/health").status, 200);
  world.remote = "198.51.100.7:5000";
  EXPECT_EQ(world.Serve(kMember, "GET", "/api/v1/jobs").status, 200);
  // One more try a second later.
  world.remote = "203.0.113.9:5000";
  world.clock().Advance(std::chrono::seconds(1));
  EXPECT_EQ(world.Serve(kMember, "GET", "/api/v1/jobs").status, 200);
  EXPECT_EQ(world.Serve(guess, "GET", "/api/v1/jobs").status, 401);
  EXPECT_EQ(world.Serve(guess, "GET", "/api/v1/jobs").status, 429);
}

}  // namespace
}  // namespace cohort::api
