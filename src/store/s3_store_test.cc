// The S3 backend against a real S3 server: Ceph's RADOS Gateway, started once for this binary
// (ceph_gateway_test_fixture.h). The whole contract suite, every test in a fresh prefix; then
// what only S3 shows: multipart uploads, failed ones leaving nothing behind, a store that is down,
// a secret that is wrong.
#include "store/s3_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <thread>

#include "store/ceph_gateway_test_fixture.h"
#include "store/open_store.h"
#include "store/s3_access_issuer.h"
#include "store/s3_sts.h"
#include "store/store_contract_test_fixture.h"

namespace cohort::store {
namespace {

namespace fs = std::filesystem;

const auto* const kGateway = ::testing::AddGlobalTestEnvironment(new CephGateway);

// Small backoffs: a test of retries should not wait like production.
S3Options FastOptions() {
  S3Options options;
  options.attempts = 3;
  options.first_backoff = std::chrono::milliseconds(20);
  options.max_backoff = std::chrono::milliseconds(100);
  options.connect_timeout = std::chrono::milliseconds(2000);
  options.stall_timeout = std::chrono::seconds(5);
  return options;
}

// A store in a prefix no other test uses.
std::unique_ptr<S3Store> FreshStore(S3Options options = FastOptions(),
                                    const std::string& name = "") {
  static std::atomic<int> counter{0};
  CephGateway* gateway = CephGateway::Get();
  EXPECT_TRUE(gateway->up()) << "the Ceph gateway did not start";
  if (!gateway->up()) return nullptr;
  std::string prefix = fmt::format(
      "t{}-{}/{}", ::getpid(), ++counter,
      name.empty() ? ::testing::UnitTest::GetInstance()->current_test_info()->name() : name);
  for (char& c : prefix) {
    if (c == '.') c = '_';  // "Suite/Test/0" has no dots, but be sure the prefix is a key
  }
  auto opened = S3Store::Open(gateway->connection(),
                              S3Location{.bucket = CephGateway::kBucket, .prefix = prefix},
                              std::move(options));
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  return opened.ok() ? std::move(opened).value() : nullptr;
}

INSTANTIATE_TEST_SUITE_P(S3, StoreContract,
                         ::testing::Values([](const std::string&) -> std::unique_ptr<ObjectStore> {
                           return FreshStore();
                         }),
                         [](const auto&) { return std::string("CephGateway"); });

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937_64 random(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = random();
    std::memcpy(s.data() + i, &v, std::min<size_t>(8, n - i));
  }
  return s;
}

class S3StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = fs::temp_directory_path() /
               fmt::format("cohort-s3-{}-{}", ::getpid(),
                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(scratch_);
    fs::create_directories(scratch_);
  }
  void TearDown() override { fs::remove_all(scratch_); }
  std::string File(const std::string& name, const std::string& content) {
    std::string path = (scratch_ / name).string();
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Multipart above 6 MiB, in parts of 5 MiB (the least S3 takes).
  static S3Options Multipart() {
    S3Options options = FastOptions();
    options.multipart_threshold = size_t{6} << 20;
    options.part_size = size_t{5} << 20;
    return options;
  }
  fs::path scratch_;
};

TEST_F(S3StoreTest, LargeFilesGoUpInPartsAndComeBackByteIdentical) {
  S3Options options = Multipart();
  std::vector<int> parts;
  options.after_part = [&](int part) { parts.push_back(part); };
  auto store = FreshStore(options);
  ASSERT_NE(store, nullptr);
  const std::string big = RandomBytes((size_t{12} << 20) + 12345, 1);
  ASSERT_TRUE(store->PutFile("ckpt/model.pt", File("model.pt", big)).ok());
  EXPECT_EQ(parts, (std::vector<int>{1, 2, 3}));  // 5 + 5 + 2 MiB
  EXPECT_EQ(store->Head("ckpt/model.pt")->size, static_cast<int64_t>(big.size()));
  std::string out = (scratch_ / "back.pt").string();
  ASSERT_TRUE(store->GetFile("ckpt/model.pt", out).ok());
  EXPECT_TRUE(Read(out) == big) << "the object differs from the file";
  // From memory too, and replacing what was there.
  parts.clear();
  const std::string other = RandomBytes((size_t{7} << 20) + 1, 2);
  ASSERT_TRUE(store->Put("ckpt/model.pt", other).ok());
  EXPECT_EQ(parts, (std::vector<int>{1, 2}));
  auto back = store->Get("ckpt/model.pt", other.size());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(*back == other) << "the object differs from the buffer";
  // At the threshold it is one PUT.
  parts.clear();
  ASSERT_TRUE(store->Put("small", RandomBytes(size_t{6} << 20, 3)).ok());
  EXPECT_TRUE(parts.empty());
  auto pending = store->PendingUploads("");
  ASSERT_TRUE(pending.ok()) << pending.status().ToString();
  EXPECT_TRUE(pending->empty());
}

TEST_F(S3StoreTest, AMultipartUploadThatFailsLeavesNoObjectAndNoParts) {
  const std::string prefix = fmt::format("t{}/failed-multipart", ::getpid());
  auto open = [&](S3Options options) {
    auto opened = S3Store::Open(CephGateway::Get()->connection(),
                                S3Location{.bucket = CephGateway::kBucket, .prefix = prefix},
                                std::move(options));
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    return opened.ok() ? std::move(opened).value() : nullptr;
  };
  const std::string path = File("changing.bin", RandomBytes(size_t{13} << 20, 4));
  auto watcher = open(FastOptions());
  ASSERT_NE(watcher, nullptr);
  std::vector<std::string> pending_mid_way;
  S3Options options = Multipart();
  // After the first part, the file shrinks under the upload (a writer truncated it).
  options.after_part = [&](int part) {
    if (part != 1) return;
    auto pending = watcher->PendingUploads("");
    if (pending.ok()) pending_mid_way = *pending;
    fs::resize_file(path, size_t{1} << 20);
  };
  auto store = open(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put("out/kept", "old").ok());
  Status s = store->PutFile("out/kept", path);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("shrank while it was uploaded"), std::string::npos) << s.message();
  EXPECT_EQ(pending_mid_way, (std::vector<std::string>{"out/kept"}))
      << "the upload was not pending mid-way: the check below would prove nothing";
  EXPECT_EQ(*store->Get("out/kept", 10), "old");
  auto pending = store->PendingUploads("");
  ASSERT_TRUE(pending.ok()) << pending.status().ToString();
  EXPECT_TRUE(pending->empty()) << "parts left behind under " << pending->front();
  // A new object that fails leaves nothing at all.
  fs::resize_file(path, size_t{13} << 20);
  EXPECT_FALSE(store->PutFile("out/new", path).ok());
  EXPECT_EQ(store->Head("out/new").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store->PendingUploads("")->empty());
}

TEST_F(S3StoreTest, KeysHoldAnyCharacterTheContractAllows) {
  auto store = FreshStore();
  ASSERT_NE(store, nullptr);
  const std::vector<std::string> keys = {"a+b/c d.txt",
                                         "100%/x%2Fy",
                                         "q?x=1&y=2#frag",
                                         "semi;colon,comma=eq:at@",
                                         "tilde~/$dollar",
                                         "quote'\"<xml>&amp;",
                                         "\xe6\x97\xa5\xe6\x9c\xac/\xf0\x9f\x9a\x80"};
  for (const auto& key : keys) {
    ASSERT_TRUE(store->Put(key, key).ok()) << key;
    auto got = store->Get(key, 100);
    ASSERT_TRUE(got.ok()) << key << ": " << got.status().ToString();
    EXPECT_EQ(*got, key);
  }
  auto page = store->List("", "", 100);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  std::vector<std::string> listed;
  for (const auto& o : page->objects) listed.push_back(o.key);
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(listed, sorted);
  // A prefix and a start that need encoding in the query.
  auto plus = store->List("a+b/", "", 10);
  ASSERT_TRUE(plus.ok());
  ASSERT_EQ(plus->objects.size(), 1u);
  EXPECT_EQ(plus->objects[0].key, "a+b/c d.txt");
  auto after = store->List("", "semi;colon,comma=eq:at@", 10);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->objects.size(), 2u);
}

TEST_F(S3StoreTest, AStoreNobodyAnswersIsUnavailableNamingItsEndpointAfterItsRetries) {
  S3Connection nowhere = CephGateway::Get()->connection();
  nowhere.endpoint = "http://127.0.0.1:1";  // nothing listens on port 1
  auto opened = S3Store::Open(nowhere, S3Location{.bucket = CephGateway::kBucket, .prefix = "x"},
                              FastOptions());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto store = std::move(opened).value();
  auto start = std::chrono::steady_clock::now();
  Status s = store->Put("a", "b");
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("cannot reach the object store at http://127.0.0.1:1"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("tried 3 times"), std::string::npos) << s.message();
  // Two backoffs of 20 ms and 40 ms (each at least half that), and no more.
  EXPECT_GE(took, std::chrono::milliseconds(30));
  EXPECT_LT(took, std::chrono::seconds(3));
  EXPECT_EQ(store->Get("a", 10).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(store->List("", "", 10).status().code(), StatusCode::kUnavailable);
}

TEST_F(S3StoreTest, APausedGatewayIsCutOffAfterTheStallTimeout) {
  S3Options options = FastOptions();
  options.attempts = 2;
  options.stall_timeout = std::chrono::seconds(1);
  auto store = FreshStore(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put("a", "b").ok());
  pid_t rgw = CephGateway::Get()->GatewayPid();
  ASSERT_GT(rgw, 0);
  ASSERT_EQ(::kill(rgw, SIGSTOP), 0);
  auto start = std::chrono::steady_clock::now();
  auto got = store->Get("a", 10);
  auto took = std::chrono::steady_clock::now() - start;
  ::kill(rgw, SIGCONT);
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable) << got.status().ToString();
  EXPECT_NE(got.status().message().find(CephGateway::Get()->connection().endpoint),
            std::string::npos);
  EXPECT_LT(took, std::chrono::seconds(6));
  // Once it runs again, so does the store.
  EXPECT_EQ(*store->Get("a", 10), "b");
}

TEST_F(S3StoreTest, AWrongSecretIsPermissionDeniedAndNeverShown) {
  S3Connection wrong = CephGateway::Get()->connection();
  wrong.secret_key = "NotTheSecretAtAll0123456789abcdefghijklm";
  auto opened = S3Store::Open(wrong, S3Location{.bucket = CephGateway::kBucket, .prefix = "x"},
                              FastOptions());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto store = std::move(opened).value();
  for (Status s : {store->Put("a", "b"), store->Get("a", 10).status(), store->Head("a").status(),
                   store->List("", "", 1).status(), store->Delete("a")}) {
    EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s.ToString();
    EXPECT_NE(s.message().find("refused the credentials"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("HTTP 403"), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find(wrong.secret_key), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find(CephGateway::Get()->connection().secret_key), std::string::npos);
  }
  // The gateway's code says why (RGW 16.2 says AccessDenied, AWS SignatureDoesNotMatch).
  Status put = store->Put("a", "b");
  EXPECT_TRUE(put.message().find("AccessDenied") != std::string::npos ||
              put.message().find("SignatureDoesNotMatch") != std::string::npos)
      << put.message();
}

TEST_F(S3StoreTest, ABucketThatDoesNotExistIsNotAnEmptyStore) {
  auto opened = S3Store::Open(CephGateway::Get()->connection(),
                              S3Location{.bucket = "no-such-bucket", .prefix = ""}, FastOptions());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto store = std::move(opened).value();
  for (Status s : {store->Get("a", 10).status(), store->Delete("a"),
                   store->List("", "", 1).status(), store->Put("a", "b")}) {
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
    EXPECT_NE(s.message().find("NoSuchBucket"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace cohort::store

namespace cohort::store {
namespace {

// Per-job credentials from Ceph's STS: a job's store reaches its own prefix and nothing else.
TEST_F(S3StoreTest, ScopedCredentialsReachTheirPrefixOnly) {
  const CephGateway& gateway = *CephGateway::Get();
  ASSERT_TRUE(gateway.up());
  const S3Location location{.bucket = CephGateway::kBucket,
                            .prefix = fmt::format("t{}/scoped", ::getpid())};
  auto master = S3Store::Open(gateway.connection(), location, FastOptions());
  ASSERT_TRUE(master.ok());
  ASSERT_TRUE((*master)->Put("jobs/8/outputs/secret.txt", "job 8's").ok());
  ASSERT_TRUE((*master)->Put("jobs/7/inputs/data.txt", "for job 7").ok());

  auto issued = IssueScopedCredentials(gateway.connection(), location, "jobs/7",
                                       std::chrono::seconds(900), FastOptions());
  ASSERT_TRUE(issued.ok()) << issued.status().ToString();
  EXPECT_FALSE(issued->expiration.empty());
  EXPECT_NE(issued->access_key, gateway.connection().access_key);
  S3Options options = Multipart();
  auto job =
      S3Store::Open(WithTemporaryCredentials(gateway.connection(), *issued), location, options);
  ASSERT_TRUE(job.ok());
  S3Store& store = **job;

  // Inside its prefix: everything, multipart uploads included.
  ASSERT_TRUE(store.Put("jobs/7/outputs/model.txt", "weights").ok());
  EXPECT_EQ(*store.Get("jobs/7/inputs/data.txt", 100), "for job 7");
  const std::string big = RandomBytes((size_t{11} << 20) + 7, 5);
  Status multipart = store.PutFile("jobs/7/outputs/big.bin", File("big.bin", big));
  ASSERT_TRUE(multipart.ok()) << multipart.ToString();
  EXPECT_TRUE(*(*master)->Get("jobs/7/outputs/big.bin", big.size()) == big);
  auto mine = store.List("jobs/7/", "", 10);
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  EXPECT_EQ(mine->objects.size(), 3u);
  ASSERT_TRUE(store.Delete("jobs/7/outputs/model.txt").ok());

  // Outside it: refused, whether reading, writing, deleting or listing.
  for (Status s :
       {store.Put("jobs/8/outputs/x", "intruder"),
        store.Get("jobs/8/outputs/secret.txt", 100).status(),
        store.Head("jobs/8/outputs/secret.txt").status(), store.Delete("jobs/8/outputs/secret.txt"),
        store.Put("jobs/70/x", "near"), store.List("", "", 10).status(),
        store.List("jobs/", "", 10).status(), store.List("jobs/8/", "", 10).status()}) {
    EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s.ToString();
    EXPECT_EQ(s.message().find(issued->secret_key), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find(issued->session_token), std::string::npos) << s.message();
  }
  EXPECT_EQ(*(*master)->Get("jobs/8/outputs/secret.txt", 100), "job 8's");
  EXPECT_EQ((*master)->Head("jobs/70/x").status().code(), StatusCode::kNotFound);

  // A job that reads datasets: the chunks and its own datasets' manifests, to read only.
  ASSERT_TRUE((*master)->Put("blobs/ab/abcd", "chunk").ok());
  ASSERT_TRUE((*master)->Put("datasets/vision/digits/2.json", "{}").ok());
  ASSERT_TRUE((*master)->Put("datasets/vision/secret/1.json", "{}").ok());
  auto reader =
      IssueScopedCredentials(gateway.connection(), location, "jobs/9", std::chrono::seconds(900),
                             FastOptions(), {"blobs/", "datasets/vision/digits/2.json"});
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto reading =
      S3Store::Open(WithTemporaryCredentials(gateway.connection(), *reader), location, options);
  ASSERT_TRUE(reading.ok());
  EXPECT_EQ(*(*reading)->Get("blobs/ab/abcd", 100), "chunk");
  EXPECT_EQ(*(*reading)->Get("datasets/vision/digits/2.json", 100), "{}");
  ASSERT_TRUE((*reading)->Put("jobs/9/outputs/x", "mine").ok());
  for (Status s : {(*reading)->Put("blobs/ab/abcd", "overwritten"),
                   (*reading)->Delete("blobs/ab/abcd"), (*reading)->List("blobs/", "", 10).status(),
                   (*reading)->Get("datasets/vision/secret/1.json", 100).status(),
                   (*reading)->Put("datasets/vision/digits/2.json", "x")}) {
    EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s.ToString();
  }
  EXPECT_EQ(*(*master)->Get("blobs/ab/abcd", 100), "chunk");

  // A wrong secret is refused by STS too, without the secret in the message.
  S3Connection wrong = gateway.connection();
  wrong.secret_key = "NotTheSecretAtAll0123456789abcdefghijklm";
  auto refused =
      IssueScopedCredentials(wrong, location, "jobs/7", std::chrono::seconds(900), FastOptions());
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied) << refused.status().ToString();
  EXPECT_EQ(refused.status().message().find(wrong.secret_key), std::string::npos);
}

}  // namespace
}  // namespace cohort::store

namespace cohort::store {
namespace {

// The master's issuer of per-job credentials (store/s3_access_issuer.h): off the caller's thread,
// scoped to the job's keys, kept for the next ask.
TEST(S3AccessIssuerTest, IssuesEachJobsCredentialsOffTheCallersThreadAndKeepsThem) {
  const CephGateway& gateway = *CephGateway::Get();
  ASSERT_TRUE(gateway.up());
  S3Connection connection = gateway.connection();
  connection.role_arn = gateway.role_arn();
  const S3Location location{.bucket = CephGateway::kBucket,
                            .prefix = fmt::format("t{}/issuer", ::getpid())};
  S3AccessIssuer issuer(connection, location, std::chrono::seconds(3600));
  std::optional<StoreAccess> access;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!(access = issuer.For(std::string("jobs/5"))) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(access) << "no credentials within 30 s";
  EXPECT_NE(access->access_key, connection.access_key);
  EXPECT_FALSE(access->session_token.empty());
  EXPECT_EQ(access->bucket, CephGateway::kBucket);
  EXPECT_EQ(access->prefix, location.prefix);
  auto again = issuer.For(std::string("jobs/5"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->access_key, access->access_key);  // kept, not issued anew

  auto job = OpenStore(*access);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_TRUE((*job)->Put("jobs/5/outputs/a", "mine").ok());
  EXPECT_EQ((*job)->Put("jobs/6/outputs/a", "not mine").code(), StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace cohort::store
