// The artifact routes on a served master: a job's outputs listed a page at a time and read whole
// or by ranges from the master's own directory store, through the job's read rules, with bad
// paths and ranges refused naming them, and a bound on the store reads under way.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "api/byte_range.h"
#include "api/served_master_test_fixture.h"
#include "store/directory_store.h"

namespace cohort::api {
namespace {

constexpr char kSpec[] = "name: x\ntasks: [{role: main, command: [\"true\"]}]\n";
constexpr int64_t kMiB = int64_t{1} << 20;

// The master's directory store, whose reads wait while the gate is shut (the test's hand on the
// reader thread: how the bound on reads under way is reached without racing).
class GatedStore final : public store::ObjectStore {
 public:
  explicit GatedStore(std::unique_ptr<store::ObjectStore> inner) : inner_(std::move(inner)) {}
  void Shut() {
    std::lock_guard lock(mu_);
    open_ = false;
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    opened_.notify_all();
  }
  Status Put(const std::string& key, std::string_view data) override {
    return inner_->Put(key, data);
  }
  Status PutFile(const std::string& key, const std::string& path) override {
    return inner_->PutFile(key, path);
  }
  StatusOr<std::string> Get(const std::string& key, size_t max) override {
    Wait();
    return inner_->Get(key, max);
  }
  StatusOr<std::string> GetRange(const std::string& key, int64_t offset, size_t length) override {
    Wait();
    return inner_->GetRange(key, offset, length);
  }
  Status GetFile(const std::string& key, const std::string& path) override {
    Wait();
    return inner_->GetFile(key, path);
  }
  StatusOr<store::ObjectInfo> Head(const std::string& key) override {
    Wait();
    return inner_->Head(key);
  }
  StatusOr<store::ListPage> List(const std::string& p, const std::string& a, size_t l) override {
    Wait();
    return inner_->List(p, a, l);
  }
  Status Delete(const std::string& key) override { return inner_->Delete(key); }

 private:
  void Wait() {
    std::unique_lock lock(mu_);
    opened_.wait(lock, [&] { return open_; });
  }
  std::unique_ptr<store::ObjectStore> inner_;
  std::mutex mu_;
  std::condition_variable opened_;
  bool open_ = true;
};

class ArtifactRoutesTest : public ServedMaster {
 protected:
  std::unique_ptr<store::ObjectStore> Objects(std::unique_ptr<store::ObjectStore> s) override {
    auto gated = std::make_unique<GatedStore>(std::move(s));
    gate_ = gated.get();
    return gated;
  }
  void SetUp() override {
    ServedMaster::SetUp();
    ASSERT_EQ(Serve("POST", "/api/v1/jobs", {}, kSpec).status, 201);  // job 1, ada's
    auto objects = store::OpenDirectoryStore((dir_ / "store").string());
    ASSERT_TRUE(objects.ok());
    objects_ = std::move(objects).value();
  }
  void TearDown() override {
    // A test that failed with the gate shut must not leave the reader waiting on it for ever.
    if (gate_ != nullptr) gate_->Open();
    ServedMaster::TearDown();
  }
  void Put(const std::string& key, const std::string& data) {
    ASSERT_TRUE(objects_->Put(key, data).ok()) << key;
  }
  // A request as ada (or with `token`), with these headers.
  std::shared_ptr<RecordingResponder> Send(const std::string& target,
                                           std::map<std::string, std::string> headers = {},
                                           const std::string& token = "") {
    HttpRequest request;
    request.method = "GET";
    size_t q = target.find('?');
    request.path = target.substr(0, q);
    if (q != std::string::npos) request.query = ParseQuery(target.substr(q + 1));
    request.headers = std::move(headers);
    request.headers["authorization"] = "Bearer " + (token.empty() ? token_ : token);
    request.remote = "127.0.0.1:40000";
    auto recorder = std::make_shared<RecordingResponder>();
    api_->Handle(std::move(request), recorder);
    return recorder;
  }
  HttpResponse Get(const std::string& target, std::map<std::string, std::string> headers = {},
                   const std::string& token = "") {
    auto recorder = Send(target, std::move(headers), token);
    EXPECT_TRUE(loop_.SettleUntil(ioc_, [&] { return recorder->answers > 0; })) << target;
    EXPECT_EQ(recorder->answers, 1);
    return recorder->response;
  }
  static std::string Header(const HttpResponse& r, const std::string& name) {
    for (const auto& [key, value] : r.headers) {
      if (key == name) return value;
    }
    return "(none)";
  }
  static std::vector<std::string> Paths(const HttpResponse& r) {
    std::vector<std::string> paths;
    const Json doc = *ParseJson(r.body);
    for (const auto& f : doc["files"]) paths.push_back(f["path"]);
    return paths;
  }

  GatedStore* gate_ = nullptr;
  std::unique_ptr<store::ObjectStore> objects_;
};

TEST_F(ArtifactRoutesTest, OutputsAreListedAPageAtATimeRelativeToTheJob) {
  Put("jobs/1/outputs/metrics.json", "{}");
  Put("jobs/1/outputs/ckpt/a.bin", "aaaa");
  Put("jobs/1/outputs/ckpt/b.bin", "bb");
  Put("jobs/10/outputs/other.txt", "not job 1's");
  Put("jobs/1/code/train.py", "not an output");
  HttpResponse all = Get("/api/v1/jobs/1/artifacts");
  ASSERT_EQ(all.status, 200) << all.body;
  Json doc = *ParseJson(all.body);
  EXPECT_EQ(doc["job"], 1);
  EXPECT_TRUE(doc["artifacts"].is_null());  // no upload reported yet
  EXPECT_EQ(doc["more"], false);
  EXPECT_EQ(Paths(all), (std::vector<std::string>{"ckpt/a.bin", "ckpt/b.bin", "metrics.json"}));
  EXPECT_EQ(doc["files"][0]["size"], 4);
  HttpResponse first = Get("/api/v1/jobs/1/artifacts?limit=2");
  EXPECT_EQ(Paths(first), (std::vector<std::string>{"ckpt/a.bin", "ckpt/b.bin"}));
  EXPECT_EQ((*ParseJson(first.body))["more"], true);
  HttpResponse rest = Get("/api/v1/jobs/1/artifacts?limit=2&after=ckpt/b.bin");
  EXPECT_EQ(Paths(rest), (std::vector<std::string>{"metrics.json"}));
  EXPECT_EQ((*ParseJson(rest.body))["more"], false);
  EXPECT_EQ(Get("/api/v1/jobs/2/artifacts").status, 404);
  for (const char* bad : {"limit=0", "limit=1001", "after=../x", "after=/etc", "page=2"}) {
    HttpResponse r = Get(std::string("/api/v1/jobs/1/artifacts?") + bad);
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
  }
  EXPECT_NE(Get("/api/v1/jobs/1/artifacts?after=a/../b")
                .body.find(R"(after: \"a/../b\" has a \"..\" segment)"),
            std::string::npos);
}

TEST_F(ArtifactRoutesTest, AnOutputIsReadWholeUpTo8MiBAndByRangesPast) {
  Put("jobs/1/outputs/notes/r\xc3\xa9sum\xc3\xa9 1.txt", "hello");
  HttpResponse small = Get("/api/v1/jobs/1/artifacts/notes/r\xc3\xa9sum\xc3\xa9 1.txt");
  ASSERT_EQ(small.status, 200) << small.body;
  EXPECT_EQ(small.body, "hello");
  EXPECT_EQ(small.content_type, "application/octet-stream");
  EXPECT_EQ(Header(small, "Content-Disposition"),
            "attachment; filename=\"r__sum__ 1.txt\"; filename*=UTF-8''r%C3%A9sum%C3%A9%201.txt");
  EXPECT_EQ(Header(small, "X-Content-Type-Options"), "nosniff");

  std::string big(static_cast<size_t>(9 * kMiB), '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 31) >> 5);
  Put("jobs/1/outputs/model.pt", big);
  HttpResponse whole = Get("/api/v1/jobs/1/artifacts/model.pt");
  EXPECT_EQ(whole.status, 413);
  EXPECT_NE(whole.body.find("ask for it in ranges (Range: bytes=0-8388607"), std::string::npos)
      << whole.body;
  auto range = [&](const std::string& spec) {
    return Get("/api/v1/jobs/1/artifacts/model.pt", {{"range", spec}});
  };
  HttpResponse head = range("bytes=0-8388607");
  ASSERT_EQ(head.status, 206) << head.body;
  EXPECT_EQ(Header(head, "Content-Range"), "bytes 0-8388607/9437184");
  EXPECT_TRUE(head.body == big.substr(0, 8 * kMiB));
  HttpResponse tail = range("bytes=8388608-");
  EXPECT_EQ(Header(tail, "Content-Range"), "bytes 8388608-9437183/9437184");
  EXPECT_TRUE(tail.body == big.substr(8 * kMiB));
  // More than one answer holds is cut to 8 MiB, and the answer says which bytes it holds.
  HttpResponse open = range("bytes=100-");
  EXPECT_EQ(Header(open, "Content-Range"), "bytes 100-8388707/9437184");
  EXPECT_EQ(open.body.size(), static_cast<size_t>(8 * kMiB));
  HttpResponse last = range("bytes=-10");
  EXPECT_EQ(Header(last, "Content-Range"), "bytes 9437174-9437183/9437184");
  EXPECT_EQ(last.body, big.substr(big.size() - 10));
  HttpResponse past = range("bytes=9437184-");
  EXPECT_EQ(past.status, 416);
  EXPECT_EQ(Header(past, "Content-Range"), "bytes */9437184");
  for (const char* bad : {"items=0-1", "bytes=0-1,4-5", "bytes=5-1", "bytes=x-", "bytes=-0"}) {
    HttpResponse r = range(bad);
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
    EXPECT_NE(r.body.find("Range: "), std::string::npos) << r.body;
  }
  HttpResponse missing = Get("/api/v1/jobs/1/artifacts/nothing.bin");
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.body.find("job 1 has no output \\\"nothing.bin\\\""), std::string::npos)
      << missing.body;
}

TEST_F(ArtifactRoutesTest, PathsOutsideTheJobsOutputsAreRefusedNamingThem) {
  Put("jobs/1/code/train.py", "print()");
  Put("jobs/2/outputs/x", "another job's");
  for (const auto& [path, why] : std::vector<std::pair<std::string, std::string>>{
           {"../code/train.py", "path: \\\"../code/train.py\\\" has a \\\"..\\\" segment"},
           {"a/../../../2/outputs/x", "has a \\\"..\\\" segment"},
           {"/etc/passwd", "path: \\\"/etc/passwd\\\" starts with '/'"},
           {"a//b", "has an empty segment"},
           {"./x", "has a \\\".\\\" segment"},
           {"a\\b", "holds a backslash"},
           {std::string(1100, 'k'), "is longer than 1024 bytes"},
           {std::string(1015, 'k'), "is longer than 1024 bytes"}}) {  // with jobs/1/outputs/
    HttpResponse r = Get("/api/v1/jobs/1/artifacts/" + path);
    EXPECT_EQ(r.status, 400) << path.substr(0, 40) << ": " << r.body;
    EXPECT_NE(r.body.find(why), std::string::npos) << r.body;
  }
}

TEST_F(ArtifactRoutesTest, OnlyThoseWhoMayReadTheJobReadItsOutputs) {
  Put("jobs/1/outputs/model.txt", "weights");
  ASSERT_TRUE(master_->accounts()
                  .CreateUser(User{"out", false, {{"nlp", TeamRole::kMember}}, {}, {}, {}, {}})
                  .ok());
  std::string outsider = master_->accounts().Issue(TokenKind::kUser, "out", "test")->token;
  for (const char* target : {"/api/v1/jobs/1/artifacts", "/api/v1/jobs/1/artifacts/model.txt"}) {
    HttpResponse r = Get(target, {}, outsider);
    EXPECT_EQ(r.status, 403) << target << ": " << r.body;
    EXPECT_EQ(r.body.find("weights"), std::string::npos);
    EXPECT_NE(r.body.find("may not read job 1"), std::string::npos) << r.body;
  }
  EXPECT_EQ(Get("/api/v1/jobs/1/artifacts/model.txt").body, "weights");
}

TEST_F(ArtifactRoutesTest, ReadsBeyondTheBoundAreRefusedAtOnceAndTheOthersAnswered) {
  Put("jobs/1/outputs/model.txt", "weights");
  gate_->Shut();
  std::vector<std::shared_ptr<RecordingResponder>> waiting;
  for (size_t i = 0; i < StoreReads::kMaxUnderWay; ++i) {
    waiting.push_back(
        Send(i % 2 == 0 ? "/api/v1/jobs/1/artifacts/model.txt" : "/api/v1/jobs/1/artifacts"));
  }
  ASSERT_TRUE(loop_.Settle(ioc_));
  for (const auto& r : waiting) EXPECT_EQ(r->answers, 0);
  auto refused = Send("/api/v1/jobs/1/artifacts/model.txt");
  ASSERT_TRUE(loop_.Settle(ioc_));
  ASSERT_EQ(refused->answers, 1);
  EXPECT_EQ(refused->response.status, 503);
  EXPECT_NE(refused->response.body.find("too many artifact reads under way"), std::string::npos)
      << refused->response.body;
  EXPECT_EQ(Header(refused->response, "Retry-After"), "1");
  gate_->Open();
  EXPECT_TRUE(loop_.SettleUntil(ioc_, [&] {
    return std::all_of(waiting.begin(), waiting.end(), [](auto& r) { return r->answers > 0; });
  }));
  for (const auto& r : waiting) {
    EXPECT_EQ(r->answers, 1);
    EXPECT_EQ(r->response.status, 200) << r->response.body;
  }
  // Each answer gave its place back.
  EXPECT_EQ(Get("/api/v1/jobs/1/artifacts/model.txt").body, "weights");
}

TEST(ByteRange, OneRangeOfBytesIsResolvedAgainstTheSizeAndTheMostAnAnswerHolds) {
  auto resolve = [](const char* header, int64_t size, int64_t max) -> std::string {
    auto spec = ParseByteRange(header);
    if (!spec.ok()) return spec.status().message();
    auto range = ResolveByteRange(*spec, size, max);
    return range ? ContentRange(*range, size) : "unsatisfiable";
  };
  EXPECT_EQ(resolve("bytes=0-9", 100, 50), "bytes 0-9/100");
  EXPECT_EQ(resolve("bytes=90-200", 100, 50), "bytes 90-99/100");
  EXPECT_EQ(resolve("bytes=10-", 100, 50), "bytes 10-59/100");
  EXPECT_EQ(resolve("bytes=-30", 100, 50), "bytes 70-99/100");
  EXPECT_EQ(resolve("bytes=-300", 100, 500), "bytes 0-99/100");
  EXPECT_EQ(resolve("bytes=100-", 100, 50), "unsatisfiable");
  EXPECT_EQ(resolve("bytes=0-", 0, 50), "unsatisfiable");
  EXPECT_EQ(resolve("bytes=-5", 0, 50), "unsatisfiable");
  EXPECT_NE(resolve("bytes=99999999999999999999-", 100, 50).find("does not start with"),
            std::string::npos);
  EXPECT_NE(resolve("bytes= 1-2", 100, 50).find("does not start with"), std::string::npos);
  EXPECT_NE(resolve("bytes=-", 100, 50).find("names no byte"), std::string::npos);
}

}  // namespace
}  // namespace cohort::api
