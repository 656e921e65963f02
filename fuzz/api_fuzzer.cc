// The master's HTTP API in process: the real ApiServer and Master (over an in-memory store, a
// manual clock and a hand-run event loop), fed whole requests without a socket through
// ApiServer::Handle. The request target is taken apart by the HTTP server's own PercentDecode
// and ParseQuery, so every route's path, query and body parsing is reached, and so is the
// master behind them.
//
// An input is a script of requests separated by lines "===":
//
//   POST /api/v1/agents/register          <- method and target (path and query, encoded)
//   as: join                              <- header lines, up to an empty line
//
//   {"id": "n1", ...}                     <- the body: everything after the empty line
//   ===
//   TICK 20                               <- not a request: the clock moves 20 s, Master::Tick
//   ===
//   RESTART                               <- not a request: a new master over the same store
//
// "as: WHO" is not sent: it becomes the Authorization header of a caller the world knows: root
// (a cluster admin), ada (a member of the default team), join (the join token) or node:ID (that
// node's credential). An "authorization" header is sent as written, to fuzz its parsing.
//
// Every answer must be well formed: a status the API documents (never 500: nothing here can
// fail inside), JSON that parses, an error body with a code and a message, one answer per
// request. A master that fails stop on this input has let something into memory that its store
// refuses, and stops the run.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "api/api_server.h"
#include "api/hand_run_loop.h"
#include "api/http_server.h"
#include "auth/token.h"
#include "common/strings.h"
#include "fuzz/fuzz_check.h"
#include "master/master.h"
#include "model/json.h"
#include "scheduler/scheduler.h"
#include "testing/master_deps.h"
#include "testing/memory_state_store.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;
namespace net = boost::asio;

constexpr size_t kMaxRequests = 64;
// Rounds of posted work after a request; a log stream or a pass that posts more than this is a
// loop that never settles.
constexpr int kMaxRounds = 100'000;

// COHORT_FUZZ_VERBOSE=1 prints every answer: for writing seeds, and for reading a finding.
bool Verbose() {
  static const bool verbose = std::getenv("COHORT_FUZZ_VERBOSE") != nullptr;
  return verbose;
}

// Checks each answer as a client would read it.
class CheckingResponder final : public api::Responder {
 public:
  explicit CheckingResponder(net::io_context& ioc) : ioc_(ioc) {}

  void Send(api::HttpResponse response) override {
    if (Verbose()) std::fprintf(stderr, "<- %d %s\n", response.status, response.body.c_str());
    FUZZ_CHECK(!sent_ && !streaming_);  // one answer per request
    sent_ = true;
    const int s = response.status;
    if (s == 500) std::fprintf(stderr, "500: %s\n", response.body.c_str());
    FUZZ_CHECK(s == 200 || s == 201 || s == 206 || s == 400 || s == 401 || s == 403 || s == 404 ||
               s == 405 || s == 409 || s == 413 || s == 416 || s == 503);
    // A job's output (GET /jobs/{id}/artifacts/{path}): its bytes, whole or a range.
    if (response.content_type == "application/octet-stream") {
      FUZZ_CHECK(s == 200 || s == 206);
      FUZZ_CHECK(response.body.size() <= size_t{8} << 20);
      return;
    }
    FUZZ_CHECK(response.content_type == "application/json");
    auto doc = ParseJson(response.body);
    FUZZ_CHECK(doc.ok());
    if (s >= 400) {
      FUZZ_CHECK(doc->is_object() && doc->contains("error"));
      const Json& error = (*doc)["error"];
      FUZZ_CHECK(error.is_object() && error.contains("code") && error["code"].is_string());
      FUZZ_CHECK(error.contains("message") && error["message"].is_string());
    }
    if (s == 405) {
      FUZZ_CHECK(std::any_of(response.headers.begin(), response.headers.end(),
                             [](const auto& h) { return h.first == "Allow"; }));
    }
  }

  void StartStream(int status, std::string content_type,
                   std::vector<std::pair<std::string, std::string>> headers = {}) override {
    FUZZ_CHECK(!sent_ && !streaming_);
    FUZZ_CHECK(status == 200);
    streaming_ = true;
  }

  void WriteChunk(std::string data, std::function<void(bool)> done) override {
    if (Verbose()) std::fprintf(stderr, "<- chunk %s", data.c_str());
    FUZZ_CHECK(streaming_ && !ended_);
    FUZZ_CHECK(!data.empty());
    // Written later, as a socket would.
    net::post(ioc_, [done = std::move(done)] { done(true); });
  }

  void EndStream() override {
    if (Verbose()) std::fprintf(stderr, "<- end of stream\n");
    FUZZ_CHECK(streaming_ && !ended_);
    ended_ = true;
  }

  bool closed() const override { return false; }

 private:
  net::io_context& ioc_;
  bool sent_ = false;
  bool streaming_ = false;
  bool ended_ = false;
};

// One master with its API, over the store `disk` (which outlives restarts).
class World {
 public:
  World(const fs::path& dir, const testing::MemoryStateStore& disk, ManualClock& clock) {
    master::MasterConfig config;
    config.data_dir = dir.string();
    config.fail_stop = [](const Status& s) {
      std::fprintf(stderr, "fail stop: %s\n", s.ToString().c_str());
      FUZZ_CHECK(false);
    };
    auto m = master::Master::Create(
        config, cohort::testing::TestMasterDeps(config.data_dir, disk.Reopen()), clock, loop_);
    if (!m.ok()) std::fprintf(stderr, "%s\n", m.status().ToString().c_str());
    FUZZ_CHECK(m.ok());
    master_ = std::move(m).value();
    api_ = std::make_unique<api::ApiServer>(ioc_, *master_);
    if (!master_->accounts().HasUsers()) {
      master::Accounts& accounts = master_->accounts();
      FUZZ_CHECK(accounts.CreateUser(User{"root", true, {}, {}, {}, {}, {}}).ok());
      FUZZ_CHECK(
          accounts.CreateUser(User{"ada", false, {{"default", TeamRole::kMember}}, {}, {}, {}, {}})
              .ok());
    }
  }

  // The token of "root", "ada", "join" or "node:ID", made on first use, the same every time:
  // its id and secret are spelled from the caller's name.
  std::string TokenOf(std::string_view who) {
    TokenKind kind = who == "join"              ? TokenKind::kJoin
                     : who.starts_with("node:") ? TokenKind::kNode
                                                : TokenKind::kUser;
    std::string subject(kind == TokenKind::kNode   ? who.substr(5)
                        : kind == TokenKind::kJoin ? ""
                                                   : who);
    std::string id = auth::HashToken(who).substr(0, auth::kTokenIdLength);
    std::string token =
        std::string(auth::kTokenPrefix) + id + "_" + std::string(auth::kTokenSecretLength, 'x');
    if (!master_->accounts().FindToken(id)) {
      TokenRecord record;
      record.id = id;
      record.kind = kind;
      record.subject = subject;
      record.hash = auth::HashToken(token);
      (void)master_->accounts().Add(record);
    }
    return token;
  }

  ~World() {
    api_->Stop();
    Settle();
    api_.reset();
    master_.reset();
  }

  void Serve(api::HttpRequest request) {
    if (auto as = request.headers.find("as"); as != request.headers.end()) {
      request.headers["authorization"] = "Bearer " + TokenOf(as->second);
      request.headers.erase(as);
    }
    if (Verbose()) std::fprintf(stderr, "-> %s %s\n", request.method.c_str(), request.path.c_str());
    // A store read (a job's outputs) answers later, from the API's reader thread: at a later
    // Settle, or not at all if the world ends first (Stop drops the reads still queued).
    api_->Handle(std::move(request), std::make_shared<CheckingResponder>(ioc_));
    Settle();
  }

  void Tick() {
    master_->Tick();
    Settle();
  }

 private:
  // Runs what the master and the API posted until nothing is left (timers of long polls wait
  // for real time, and are cancelled when the world ends).
  void Settle() { FUZZ_CHECK(loop_.Settle(ioc_, kMaxRounds)); }

  net::io_context ioc_;  // first: the API's timers and posted work refer to it
  api::HandRunLoop loop_;
  std::unique_ptr<master::Master> master_;
  std::unique_ptr<api::ApiServer> api_;
};

fs::path& DataDir() {
  static fs::path dir;
  return dir;
}

// "METHOD TARGET\nname: value\n...\n\nBODY" -> the request the HTTP server would hand over.
api::HttpRequest ParseRequest(std::string_view text) {
  api::HttpRequest request;
  size_t eol = text.find('\n');
  std::string_view line = text.substr(0, eol);
  text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
  size_t space = line.find(' ');
  request.method = std::string(line.substr(0, space));
  std::string_view target = space == std::string_view::npos ? "/" : line.substr(space + 1);
  size_t q = target.find('?');
  request.path = api::PercentDecode(target.substr(0, q), false);
  if (q != std::string_view::npos) request.query = api::ParseQuery(target.substr(q + 1));
  while (!text.empty()) {
    eol = text.find('\n');
    line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (line.empty()) break;
    size_t colon = line.find(':');
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string_view value = colon == std::string_view::npos ? "" : Trim(line.substr(colon + 1));
    request.headers[name] = std::string(value);
  }
  request.body = std::string(text);
  request.remote = "127.0.0.1:40000";
  return request;
}

void Run(std::string_view script) {
  const fs::path& dir = DataDir();
  fs::remove_all(dir);
  fs::create_directories(dir);
  testing::MemoryStateStore disk;
  ManualClock clock;
  auto world = std::make_unique<World>(dir, disk, clock);
  size_t served = 0;
  while (served++ < kMaxRequests) {
    size_t end = script.find("\n===\n");
    std::string_view text = script.substr(0, end);
    if (text.starts_with("TICK")) {
      auto seconds = ParseInteger(Trim(text.substr(4)), 0, 3600);
      clock.Advance(std::chrono::seconds(seconds.value_or(1)));
      world->Tick();
    } else if (text.starts_with("RESTART")) {
      world.reset();
      world = std::make_unique<World>(dir, disk, clock);
    } else {
      clock.Advance(std::chrono::milliseconds(100));
      world->Serve(ParseRequest(text));
    }
    if (end == std::string_view::npos) break;
    script.remove_prefix(end + 5);
  }
}

}  // namespace
}  // namespace cohort

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  // The task logs go to memory when the machine has /dev/shm: an fsync per upload costs nothing.
  std::filesystem::path base = std::filesystem::exists("/dev/shm")
                                   ? std::filesystem::path("/dev/shm")
                                   : std::filesystem::temp_directory_path();
  cohort::DataDir() = base / ("cohort-api-fuzz-" + std::to_string(getpid()));
  std::atexit([] { std::filesystem::remove_all(cohort::DataDir()); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cohort::Run(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
