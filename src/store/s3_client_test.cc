// The S3 backend's requests on the wire, against a scripted HTTP server on loopback (a fake: the
// answers Ceph does not give on demand, such as 503 SlowDown): what is signed and sent, which
// answers are tried again and how often, and that a body larger than the reader takes is refused.
// s3_store_test.cc runs the same code against a real Ceph RADOS Gateway.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store/s3_store.h"

namespace cohort::store {
namespace {

// Answers each request with the next scripted answer (the last one again once they run out),
// one connection per request, and keeps what it was sent.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::vector<std::string> answers) : answers_(std::move(answers)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    stopping_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

  static std::string Answer(int status, const std::string& body, const std::string& headers = "") {
    return "HTTP/1.1 " + std::to_string(status) +
           " X\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n" +
           headers + "\r\n" + body;
  }

 private:
  void Serve() {
    for (size_t n = 0;; ++n) {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      std::string request;
      char buffer[4096];
      size_t body_from = std::string::npos;
      size_t length = 0;
      while (true) {
        if (body_from == std::string::npos &&
            (body_from = request.find("\r\n\r\n")) != std::string::npos) {
          body_from += 4;
          if (request.find("Expect: 100-continue") < body_from) {
            [[maybe_unused]] ssize_t sent = ::write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
          }
          size_t at = request.find("Content-Length: ");
          if (at != std::string::npos && at < body_from)
            length = std::stoul(request.substr(at + 16));
        }
        if (body_from != std::string::npos && request.size() >= body_from + length) break;
        ssize_t got = ::read(c, buffer, sizeof buffer);
        if (got <= 0) break;
        request.append(buffer, static_cast<size_t>(got));
      }
      {
        std::lock_guard lock(mu_);
        requests_.push_back(request);
      }
      const std::string& answer = answers_[std::min(n, answers_.size() - 1)];
      [[maybe_unused]] ssize_t sent = ::write(c, answer.data(), answer.size());
      ::close(c);
      if (stopping_) return;
    }
  }

  std::vector<std::string> answers_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<std::string> requests_;
};

const std::string kSlowDown = ScriptedServer::Answer(
    503, "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>");

std::unique_ptr<S3Store> StoreAt(const std::string& endpoint, int attempts = 3,
                                 const std::string& token = "") {
  S3Options options;
  options.attempts = attempts;
  options.first_backoff = std::chrono::milliseconds(5);
  options.max_backoff = std::chrono::milliseconds(20);
  auto store = S3Store::Open(S3Connection{.endpoint = endpoint,
                                          .region = "eu-west-3",
                                          .access_key = "AKTEST",
                                          .secret_key = "SECRETTEST",
                                          .session_token = token,
                                          .role_arn = ""},
                             S3Location{.bucket = "b", .prefix = "p"}, options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return std::move(store).value();
}

TEST(S3Client, RequestsArePathStyleSignedAndCarryThePayloadHeader) {
  ScriptedServer server({ScriptedServer::Answer(200, "")});
  ASSERT_TRUE(StoreAt(server.endpoint(), 1, "TOKEN123")->Put("a b/c+d", "xyz").ok());
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const std::string& r = requests[0];
  EXPECT_TRUE(r.starts_with("PUT /b/p/a%20b/c%2Bd HTTP/1.1\r\n")) << r;
  EXPECT_NE(r.find("Authorization: AWS4-HMAC-SHA256 Credential=AKTEST/"), std::string::npos) << r;
  EXPECT_NE(r.find("/eu-west-3/s3/aws4_request"), std::string::npos) << r;
  EXPECT_NE(r.find("x-amz-content-sha256: UNSIGNED-PAYLOAD\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("x-amz-security-token: TOKEN123\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("Content-Length: 3\r\n"), std::string::npos) << r;
  EXPECT_TRUE(r.ends_with("\r\n\r\nxyz")) << r;
  EXPECT_EQ(r.find("SECRETTEST"), std::string::npos) << "the secret itself went on the wire";
}

TEST(S3Client, AKeyTooLongWithTheStoresPrefixIsRefusedBeforeAnyRequest) {
  ScriptedServer server({ScriptedServer::Answer(200, "")});
  auto store = StoreAt(server.endpoint());  // prefix "p": keys are stored as "p/KEY"
  Status s = store->Put(std::string(kMaxKeyBytes - 1, 'k'), "v");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("with its prefix \"p\" it is 1025 bytes, more than S3's 1024"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(server.requests().empty());
  EXPECT_TRUE(store->Put(std::string(kMaxKeyBytes - 2, 'k'), "v").ok());
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(S3Client, AStoreOpensFromItsUrlAndConnectionFile) {
  ScriptedServer server({ScriptedServer::Answer(200, "")});
  std::string file = testing::TempDir() + "s3-open-" + std::to_string(::getpid()) + ".yaml";
  {
    std::ofstream(file) << "endpoint: " << server.endpoint()
                        << "\naccess_key: AKFILE\nsecret_key: SKFILE\n";
  }
  ::chmod(file.c_str(), 0644);
  auto open = S3Store::Open("s3://bucket-a/team/x/", file);
  EXPECT_EQ(open.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(open.status().message().find("chmod 600"), std::string::npos);
  EXPECT_EQ(S3Store::Open("s3://B/x", file).status().code(), StatusCode::kInvalidArgument);
  ::chmod(file.c_str(), 0600);
  auto store = S3Store::Open("s3://bucket-a/team/x/", file);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->Put("k", "v").ok());
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_TRUE(requests[0].starts_with("PUT /bucket-a/team/x/k ")) << requests[0].substr(0, 80);
  EXPECT_NE(requests[0].find("Credential=AKFILE/"), std::string::npos);
  ::unlink(file.c_str());
}

TEST(S3Client, BusyAnswersAreTriedAgainUntilOneSucceeds) {
  ScriptedServer server(
      {kSlowDown, ScriptedServer::Answer(500, ""), ScriptedServer::Answer(200, "")});
  Status s = StoreAt(server.endpoint(), 3)->Put("k", "v");
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST(S3Client, AServerBusyForEveryTryIsUnavailableAfterTheLast) {
  ScriptedServer server({kSlowDown});
  auto got = StoreAt(server.endpoint(), 4)->Get("k", 10);
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(got.status().message().find("HTTP 503 SlowDown: Please reduce your request rate."),
            std::string::npos)
      << got.status().message();
  EXPECT_NE(got.status().message().find(server.endpoint()), std::string::npos);
  EXPECT_EQ(server.requests().size(), 4u);
}

TEST(S3Client, OtherClientErrorsAreNotTriedAgain) {
  for (const auto& [status, code, want] : std::vector<std::tuple<int, std::string, StatusCode>>{
           {400, "InvalidArgument", StatusCode::kInternal},
           {403, "AccessDenied", StatusCode::kPermissionDenied},
           {404, "NoSuchKey", StatusCode::kNotFound},
           {409, "OperationAborted", StatusCode::kInternal}}) {
    ScriptedServer server(
        {ScriptedServer::Answer(status, "<Error><Code>" + code + "</Code></Error>")});
    auto got = StoreAt(server.endpoint(), 5)->Get("k", 10);
    EXPECT_EQ(got.status().code(), want) << status;
    EXPECT_NE(got.status().message().find(code), std::string::npos) << got.status().message();
    EXPECT_EQ(server.requests().size(), 1u) << status;
  }
}

TEST(S3Client, ARangeIsAskedWithItsHeaderAndAServerThatIgnoresItIsNoRange) {
  ScriptedServer server({ScriptedServer::Answer(206, "cdef", "Content-Range: bytes 2-5/10\r\n"),
                         // A server that ignores Range answers 200 with the whole object: taken
                         // when it fits in the range (cut to it), refused when it is larger.
                         ScriptedServer::Answer(200, "abcdef"),
                         ScriptedServer::Answer(200, "abcdefghij"),
                         ScriptedServer::Answer(416, "<Error><Code>InvalidRange</Code></Error>"),
                         ScriptedServer::Answer(404, "<Error><Code>NoSuchKey</Code></Error>")});
  auto store = StoreAt(server.endpoint());
  EXPECT_EQ(*store->GetRange("k", 2, 4), "cdef");
  EXPECT_EQ(*store->GetRange("k", 2, 6), "cdef");
  Status ignored = store->GetRange("k", 2, 4).status();
  EXPECT_EQ(ignored.code(), StatusCode::kInternal);
  EXPECT_NE(ignored.message().find("answered with the whole object (10 bytes), not the range "
                                   "asked for (bytes=2-5)"),
            std::string::npos)
      << ignored.message();
  EXPECT_EQ(*store->GetRange("k", 10, 4), "");
  EXPECT_EQ(store->GetRange("k", 0, 4).status().code(), StatusCode::kNotFound);
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 5u);
  EXPECT_NE(requests[0].find("GET /b/p/k HTTP/1.1"), std::string::npos) << requests[0];
  EXPECT_NE(requests[0].find("Range: bytes=2-5\r\n"), std::string::npos) << requests[0];
  EXPECT_NE(requests[3].find("Range: bytes=10-13\r\n"), std::string::npos) << requests[3];
}

TEST(S3Client, ABodyLargerThanTheReaderTakesIsRefusedFromItsLength) {
  ScriptedServer server({ScriptedServer::Answer(200, std::string(5000, 'x'))});
  auto got = StoreAt(server.endpoint(), 3)->Get("k", 4999);
  EXPECT_EQ(got.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(got.status().message().find("the object is 5000 bytes, more than the 4999"),
            std::string::npos)
      << got.status().message();
  EXPECT_EQ(server.requests().size(), 1u);  // and not tried again
}

TEST(S3Client, ACompletionThatFailsAfterItsOkIsAFailureAndAborted) {
  S3Options options;
  options.attempts = 1;
  options.multipart_threshold = size_t{5} << 20;
  options.part_size = size_t{5} << 20;
  ScriptedServer server(
      {ScriptedServer::Answer(200,
                              "<InitiateMultipartUploadResult><UploadId>U1</UploadId></"
                              "InitiateMultipartUploadResult>"),
       ScriptedServer::Answer(200, "", "ETag: \"e1\"\r\n"),
       ScriptedServer::Answer(200, "", "ETag: \"e2\"\r\n"),
       // S3 may answer 200 and put the error in the body.
       ScriptedServer::Answer(200, "<Error><Code>InternalError</Code><Message>m</Message></Error>"),
       ScriptedServer::Answer(204, "")});
  auto store = S3Store::Open(S3Connection{.endpoint = server.endpoint(),
                                          .region = "us-east-1",
                                          .access_key = "A",
                                          .secret_key = "S",
                                          .session_token = "",
                                          .role_arn = ""},
                             S3Location{.bucket = "b", .prefix = ""}, options);
  ASSERT_TRUE(store.ok());
  Status s = (*store)->Put("big", std::string((size_t{5} << 20) + 1, 'z'));
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.ToString();
  EXPECT_NE(s.message().find("InternalError"), std::string::npos) << s.message();
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 5u);
  EXPECT_TRUE(requests[0].starts_with("POST /b/big?uploads= ")) << requests[0].substr(0, 80);
  EXPECT_TRUE(requests[1].starts_with("PUT /b/big?partNumber=1&uploadId=U1 "));
  EXPECT_TRUE(requests[2].starts_with("PUT /b/big?partNumber=2&uploadId=U1 "));
  EXPECT_TRUE(requests[3].starts_with("POST /b/big?uploadId=U1 "));
  EXPECT_NE(requests[3].find("<Part><PartNumber>1</PartNumber><ETag>\"e1\"</ETag></Part><Part>"
                             "<PartNumber>2</PartNumber><ETag>\"e2\"</ETag></Part>"),
            std::string::npos)
      << requests[3];
  EXPECT_TRUE(requests[4].starts_with("DELETE /b/big?uploadId=U1 ")) << requests[4].substr(0, 80);
}

}  // namespace
}  // namespace cohort::store
