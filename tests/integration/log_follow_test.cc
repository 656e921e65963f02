// Followers of a job's log are bounded in number, and one whose client went away is dropped at
// once, even while the job writes nothing (docs/architecture.md, "Task logs").
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// A client that asks to follow a job's log on a plain socket and reads only the answer's head:
// what a reader looks like to the master, without a thread per reader.
class RawFollower {
 public:
  RawFollower(int port, const std::string& token, JobId job) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return;
    std::string request = fmt::format(
        "GET /api/v1/jobs/{}/logs?follow=true HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
        "{}\r\n\r\n",
        job, token);
    (void)!::write(fd_, request.data(), request.size());
  }
  ~RawFollower() { Close(); }
  RawFollower(const RawFollower&) = delete;
  RawFollower& operator=(const RawFollower&) = delete;

  // The answer's status (200, 503...), once its head has arrived; 0 if nothing came in 5 s.
  int Status() {
    std::string head;
    auto deadline = steady_clock::now() + std::chrono::seconds(5);
    while (head.find("\r\n\r\n") == std::string::npos && steady_clock::now() < deadline) {
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, 100) <= 0) continue;
      char buf[4096];
      ssize_t n = ::read(fd_, buf, sizeof(buf));
      if (n <= 0) break;
      head.append(buf, static_cast<size_t>(n));
    }
    body_ = head.substr(std::min(head.size(), head.find("\r\n\r\n") + 4));
    if (head.rfind("HTTP/1.1 ", 0) != 0) return 0;
    return std::atoi(head.c_str() + 9);
  }
  const std::string& body() const { return body_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  std::string body_;
};

TEST(LogFollow, FollowersAreBoundedAndOneThatLeftIsDroppedWhileTheJobIsSilent) {
  LocalCluster cluster("log-follow");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1);
  JobId id = cluster.Submit(R"(
name: silent
tasks:
  - role: worker
    resources: {gpus: 1}
    command: [sleep, "600"]
)");
  cluster.WaitForState(id, JobState::kRunning);
  int port = std::atoi(cluster.url().substr(cluster.url().rfind(':') + 1).c_str());

  std::vector<std::unique_ptr<RawFollower>> followers;
  for (int i = 0; i < 64; ++i) {
    followers.push_back(std::make_unique<RawFollower>(port, cluster.admin_token(), id));
    ASSERT_EQ(followers.back()->Status(), 200) << "follower " << i;
  }
  RawFollower one_too_many(port, cluster.admin_token(), id);
  EXPECT_EQ(one_too_many.Status(), 503);
  EXPECT_THAT(one_too_many.body(), ::testing::HasSubstr("already has 64 log followers"));

  // A reader goes away while the job writes nothing: its place is free at once.
  followers.front()->Close();
  auto closed_at = steady_clock::now();
  bool accepted = false;
  while (!accepted && steady_clock::now() - closed_at < std::chrono::seconds(5)) {
    RawFollower next(port, cluster.admin_token(), id);
    accepted = next.Status() == 200;
    if (!accepted) std::this_thread::sleep_for(milliseconds(20));
  }
  auto took = std::chrono::duration_cast<milliseconds>(steady_clock::now() - closed_at);
  EXPECT_TRUE(accepted);
  EXPECT_LT(took, milliseconds(1000));
  fmt::print("a follower that left was dropped within {} ms\n", took.count());
  ASSERT_TRUE(cluster.client().Kill(id).ok());
}

}  // namespace
}  // namespace cohort::testing
