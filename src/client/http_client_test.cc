#include "client/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

namespace cohort::client {
namespace {

// A server that takes connections (the kernel completes them from the backlog) and never
// answers: every request waits until its timeout or a Cancel.
class SilentServer {
 public:
  SilentServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    url_ = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  }
  ~SilentServer() { ::close(fd_); }
  const std::string& url() const { return url_; }

 private:
  int fd_ = -1;
  std::string url_;
};

TEST(HttpClient, CancelEndsARequestWaitingOnAnotherThreadAtOnce) {
  SilentServer server;
  auto client = HttpClient::Create(server.url());
  ASSERT_TRUE(client.ok());
  auto start = std::chrono::steady_clock::now();
  auto request = std::async(std::launch::async, [&] {
    return (*client)->Request("POST", "/wait", "{}", "application/json", std::chrono::seconds(30));
  });
  // Cancel until the request gives up: one sent before it began would be (rightly) ignored.
  while (request.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) {
    (*client)->Cancel();
  }
  auto result = request.get();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(result.status().message().find("cancelled"), std::string::npos)
      << result.status().ToString();
}

TEST(HttpClient, CancelWhileIdleDoesNotTouchTheNextRequest) {
  SilentServer server;
  auto client = HttpClient::Create(server.url());
  ASSERT_TRUE(client.ok());
  (*client)->Cancel();
  auto result =
      (*client)->Request("GET", "/wait", {}, "application/json", std::chrono::milliseconds(300));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kDeadlineExceeded) << result.status().ToString();
}

}  // namespace
}  // namespace cohort::client
