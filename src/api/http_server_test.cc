// The HTTP server's limits, against raw sockets: what a client that sends too much, too slowly
// or too often gets, and that the server keeps serving everyone else.
#include "api/http_server.h"
#include "api/shout_test_fixture.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace cohort::api {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace std::chrono_literals;

// Answers 200 with the body it got, or, for /wait, 200 after 800 ms or ?ms= (a long poll); /remote
// answers the client's address as the request carries it; /forever never answers (a long poll
// that outlives the test); /login marks the connection authenticated.
// The /forever requests a server has received, and those it has not answered yet.
struct Unanswered {
  std::atomic<int> received = 0;
  std::vector<std::shared_ptr<Responder>> waiting;  // on the server's thread
};

Handler EchoHandler(boost::asio::io_context& ioc,
                    std::shared_ptr<Unanswered> unanswered = std::make_shared<Unanswered>()) {
  return [&ioc, unanswered](HttpRequest request, std::shared_ptr<Responder> responder) {
    if (request.path == "/remote") {
      return responder->Send(HttpResponse{200, "text/plain", request.remote});
    }
    if (request.path == "/forever") {
      unanswered->waiting.push_back(std::move(responder));
      ++unanswered->received;
      return;
    }
    if (request.path == "/upgrade") {
      // Switches to a protocol that answers every piece it gets in capitals.
      return responder->Upgrade("shout", {{"X-Shout", "yes"}}, ServeShout);
    }
    if (request.path == "/login") responder->MarkAuthenticated();
    if (request.path == "/wait") {
      auto ms = request.query.count("ms") ? std::stoi(request.query["ms"]) : 800;
      auto timer = std::make_shared<boost::asio::steady_timer>(ioc, std::chrono::milliseconds(ms));
      timer->async_wait([timer, responder](const boost::system::error_code&) {
        responder->Send(HttpResponse{200, "text/plain", "waited"});
      });
      return;
    }
    responder->Send(HttpResponse{200, "text/plain", fmt::format("got {}", request.body.size())});
  };
}

// POST /small takes 1 KiB, everything else 64 KiB.
uint64_t TestBodyLimit(std::string_view method, std::string_view path) {
  return method == "POST" && path == "/small" ? 1024 : 64 * 1024;
}

HttpLimits SmallLimits() {
  HttpLimits limits;
  limits.max_connections = 64;
  limits.max_header_bytes = 4096;
  limits.max_target_bytes = 1024;
  limits.header_timeout = 300ms;
  limits.idle_timeout = 5s;
  return limits;
}

// A server on its own io_context thread, on a free port of 127.0.0.1.
class ServerThread {
 public:
  explicit ServerThread(HttpLimits limits = SmallLimits())
      : server_(ioc_, EchoHandler(ioc_, unanswered_), TestBodyLimit, limits) {
    Status s = server_.Listen("127.0.0.1", 0);
    EXPECT_TRUE(s.ok()) << s.ToString();
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~ServerThread() {
    work_.reset();
    ioc_.stop();
    thread_.join();
  }
  int port() const { return server_.port(); }
  // /forever requests received.
  int forever_requests() const { return unanswered_->received; }
  // Answers the /forever requests received so far: their connections are kept alive, idle.
  void AnswerForever() {
    std::promise<void> done;
    boost::asio::post(ioc_, [&] {
      for (auto& responder : unanswered_->waiting) {
        responder->Send(HttpResponse{200, "text/plain", "at last"});
      }
      unanswered_->waiting.clear();
      done.set_value();
    });
    done.get_future().get();
  }
  // Read on the server's thread, where the count lives.
  size_t connections() {
    std::promise<size_t> count;
    boost::asio::post(ioc_, [&] { count.set_value(server_.connections()); });
    return count.get_future().get();
  }

 private:
  boost::asio::io_context ioc_;
  std::shared_ptr<Unanswered> unanswered_ = std::make_shared<Unanswered>();
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_{
      boost::asio::make_work_guard(ioc_)};
  HttpServer server_;
  std::thread thread_;
};

// A blocking client socket; reads give up after 5 s. From `from` (another loopback address
// is another client address), else from 127.0.0.1.
int Connect(int port, const char* from = nullptr) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_GE(fd, 0);
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  if (from) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    EXPECT_EQ(::inet_pton(AF_INET, from, &local.sin_addr), 1);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)), 0) << strerror(errno);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << strerror(errno);
  return fd;
}

void SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return;  // the server may close early; what it answered is what counts
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// Everything until the server closes the connection (or 5 s pass).
std::string ReadUntilClosed(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

// One response on a kept-alive connection: the header and a Content-Length body.
std::string ReadResponse(int fd) {
  std::string out;
  char buf[4096];
  while (true) {
    size_t end = out.find("\r\n\r\n");
    if (end != std::string::npos) {
      size_t at = out.find("Content-Length: ");
      size_t length = at == std::string::npos ? 0 : std::stoul(out.substr(at + 16));
      if (out.size() >= end + 4 + length) return out;
    }
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

std::string Get(int port, const std::string& target) {
  int fd = Connect(port);
  SendAll(fd, fmt::format("GET {} HTTP/1.1\r\nHost: x\r\n\r\n", target));
  std::string response = ReadResponse(fd);
  ::close(fd);
  return response;
}

// Whether the server has closed the connection (its end of file has arrived), without waiting.
bool ClosedByServer(int fd) {
  char byte;
  ssize_t n = ::recv(fd, &byte, 1, MSG_DONTWAIT | MSG_PEEK);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

// Waits up to `timeout` for the server to close the connection.
bool WaitClosedByServer(int fd, std::chrono::milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (!ClosedByServer(fd)) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// A connection that sent one request, got its answer and is kept alive, idle.
int IdleConnection(int port, const std::string& target = "/x", const char* from = nullptr) {
  int fd = Connect(port, from);
  SendAll(fd, fmt::format("GET {} HTTP/1.1\r\nHost: x\r\n\r\n", target));
  EXPECT_THAT(ReadResponse(fd), StartsWith("HTTP/1.1 200 "));
  return fd;
}

template <typename Condition>
bool Eventually(Condition condition) {
  for (int i = 0; i < 400; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return condition();
}

std::string Body(const std::string& response) {
  size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

// A connection whose request is being served (the server has it), and will be as long as it
// stays open.
int ServingConnection(ServerThread& server, const char* from = nullptr) {
  int before = server.forever_requests();
  int fd = Connect(server.port(), from);
  SendAll(fd, "GET /forever HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(Eventually([&] { return server.forever_requests() > before; }));
  return fd;
}

// The audit log records where each call came from.
TEST(HttpServer, TheRequestCarriesTheClientsAddressAndPort) {
  ServerThread server;
  int fd = Connect(server.port());
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length), 0);
  SendAll(fd, "GET /remote HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string response = ReadResponse(fd);
  ::close(fd);
  EXPECT_EQ(Body(response), fmt::format("127.0.0.1:{}", ntohs(local.sin_port)));
}

TEST(HttpServerLimits, ABodyOverItsRoutesLimitIs413BeforeItIsSent) {
  ServerThread server;
  int fd = Connect(server.port());
  // Announced and never sent: the answer cannot wait for the body.
  SendAll(fd, "POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n");
  std::string response = ReadUntilClosed(fd);
  ::close(fd);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 413 "));
  EXPECT_THAT(response, HasSubstr("Connection: close"));
  EXPECT_EQ(Body(response),
            R"({"error":{"code":"invalid_argument","message":"the request body is 1000000 bytes; )"
            R"(POST /small takes at most 1 KiB"}})");
}

TEST(HttpServerLimits, AChunkedBodyOverTheLimitIs413AndOneWithinIsServed) {
  ServerThread server;
  int fd = Connect(server.port());
  SendAll(fd, "POST /small HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                  fmt::format("{:x}\r\n{}\r\n", 2000, std::string(2000, 'a')) + "0\r\n\r\n");
  std::string response = ReadUntilClosed(fd);
  ::close(fd);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 413 "));
  EXPECT_THAT(Body(response), HasSubstr("the request body is larger than that; POST /small takes "
                                        "at most 1 KiB"));

  fd = Connect(server.port());
  SendAll(fd, "POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 1024\r\n\r\n" +
                  std::string(1024, 'a'));
  response = ReadResponse(fd);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 200 "));
  EXPECT_EQ(Body(response), "got 1024");
  // Another route takes more, on the same connection.
  SendAll(fd, "POST /other HTTP/1.1\r\nHost: x\r\nContent-Length: 60000\r\n\r\n" +
                  std::string(60000, 'a'));
  EXPECT_EQ(Body(ReadResponse(fd)), "got 60000");
  ::close(fd);
}

TEST(HttpServerLimits, AClientSendingAWholeOversizedBodyStillReadsThe413) {
  ServerThread server;
  int fd = Connect(server.port());
  // Sent in full before reading: the server must not reset the connection on the unread rest.
  std::thread sender([&] {
    SendAll(fd, "POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 300000\r\n\r\n" +
                    std::string(300000, 'a'));
  });
  std::string response = ReadUntilClosed(fd);
  sender.join();
  ::close(fd);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 413 "));
}

TEST(HttpServerLimits, ALongUrlIs414) {
  ServerThread server;
  // Within the header limit but over the URL limit, and over both.
  for (size_t length : {1500, 6000}) {
    int fd = Connect(server.port());
    SendAll(fd, fmt::format("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", std::string(length, 'a')));
    std::string response = ReadUntilClosed(fd);
    ::close(fd);
    EXPECT_THAT(response, StartsWith("HTTP/1.1 414 ")) << length;
    EXPECT_EQ(Body(response),
              R"({"error":{"code":"invalid_argument","message":"the URL is longer than 1 KiB, )"
              R"(the limit"}})");
  }
  EXPECT_THAT(Get(server.port(), "/" + std::string(1000, 'a')), StartsWith("HTTP/1.1 200 "));
}

TEST(HttpServerLimits, LargeHeadersAre431) {
  ServerThread server;
  int fd = Connect(server.port());
  std::string request = "GET /x HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 100; ++i)
    request += fmt::format("X-Filler-{}: {}\r\n", i, std::string(60, 'f'));
  SendAll(fd, request + "\r\n");
  std::string response = ReadUntilClosed(fd);
  ::close(fd);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 431 "));
  EXPECT_EQ(Body(response),
            R"({"error":{"code":"invalid_argument","message":"the request header is larger )"
            R"(than 4 KiB, the limit"}})");
}

TEST(HttpServerLimits, OneHugeHeaderFieldIs431NotAnUrlTooLong) {
  ServerThread server;
  int fd = Connect(server.port());
  std::thread sender([&] {
    SendAll(fd, "GET /x HTTP/1.1\r\nHost: x\r\nX-Huge: " + std::string(200'000, 'h') + "\r\n\r\n");
  });
  std::string response = ReadUntilClosed(fd);
  sender.join();
  ::close(fd);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 431 "));
}

TEST(HttpServerLimits, MalformedRequestsAre400) {
  ServerThread server;
  int fd = Connect(server.port());
  SendAll(fd, "GET /x HTTP/1.1\r\nHost x\r\n\r\n");
  std::string response = ReadUntilClosed(fd);
  ::close(fd);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 400 "));
  EXPECT_THAT(Body(response), HasSubstr("malformed HTTP request: "));
}

TEST(HttpServerTimeouts, AHeaderTrickledTooSlowlyIsCutOffWith408) {
  ServerThread server;
  int fd = Connect(server.port());
  auto start = std::chrono::steady_clock::now();
  SendAll(fd, "GET /x HTTP/1.1\r\n");
  std::this_thread::sleep_for(100ms);
  SendAll(fd, "Host: x\r\n");  // and never the end of the header
  std::string response = ReadUntilClosed(fd);
  auto took = std::chrono::steady_clock::now() - start;
  ::close(fd);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 408 "));
  EXPECT_THAT(Body(response), HasSubstr("the request header did not arrive within 300ms"));
  EXPECT_LT(took, 3s);
}

// A client that connects and says nothing holds its place for the header timeout, not for the
// idle timeout of a kept-alive connection: it is closed, without an answer since nothing was
// asked.
TEST(HttpServerTimeouts, ANewConnectionThatSendsNothingIsClosedAfterTheHeaderTimeout) {
  ServerThread server;
  auto start = std::chrono::steady_clock::now();
  int fd = Connect(server.port());
  EXPECT_EQ(ReadUntilClosed(fd), "");
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(ClosedByServer(fd)) << "closed by the server, not given up by the client";
  ::close(fd);
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 2s) << "the idle timeout is 5 s";
  EXPECT_TRUE(Eventually([&] { return server.connections() == 0; }));
}

// The clock of a new connection's first header starts when it connects, not at its first byte.
TEST(HttpServerTimeouts, TheFirstHeaderIsDueWithinTheHeaderTimeoutOfConnecting) {
  ServerThread server;
  int fd = Connect(server.port());
  std::this_thread::sleep_for(200ms);
  SendAll(fd, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n");  // within 300 ms of connecting
  EXPECT_THAT(ReadResponse(fd), StartsWith("HTTP/1.1 200 "));
  ::close(fd);

  fd = Connect(server.port());
  std::this_thread::sleep_for(200ms);
  auto first_byte = std::chrono::steady_clock::now();
  SendAll(fd, "GET /x HTTP/1.1\r\n");
  std::string response = ReadUntilClosed(fd);
  auto took = std::chrono::steady_clock::now() - first_byte;
  ::close(fd);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 408 "));
  EXPECT_LT(took, 250ms) << "due 100 ms after its first byte, not 300 ms";
}

TEST(HttpServerTimeouts, IdleConnectionsAndLongPollsOutliveTheHeaderTimeout) {
  ServerThread server;
  int fd = IdleConnection(server.port());
  std::this_thread::sleep_for(600ms);  // twice the header timeout, kept alive between requests
  SendAll(fd, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(ReadResponse(fd), StartsWith("HTTP/1.1 200 "));
  // The answer to /wait comes after 800 ms, well past the header timeout.
  SendAll(fd, "GET /wait HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(Body(ReadResponse(fd)), "waited");
  ::close(fd);
}

// Requests being served (long polls, log streams) are never cut off to make room.
TEST(HttpServerConnections, OverTheCapWithEveryRequestBeingServedANewConnectionIsRefusedWith503) {
  HttpLimits limits = SmallLimits();
  limits.max_connections = 4;
  ServerThread server(limits);
  std::vector<int> held;
  for (int i = 0; i < 4; ++i) held.push_back(ServingConnection(server));
  ASSERT_TRUE(Eventually([&] { return server.connections() == 4; }));

  for (int extra = 0; extra < 3; ++extra) {
    int fd = Connect(server.port());
    SendAll(fd, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string response = ReadUntilClosed(fd);
    ::close(fd);
    EXPECT_THAT(response, StartsWith("HTTP/1.1 503 "));
    EXPECT_THAT(response, HasSubstr("Retry-After: 1"));
    EXPECT_EQ(Body(response),
              R"({"error":{"code":"unavailable","message":"the master has 4 connections open, )"
              R"(its limit; try again later"}})");
  }
  EXPECT_EQ(server.connections(), 4u) << "refused connections take no place";
  for (int fd : held) EXPECT_FALSE(ClosedByServer(fd)) << "a long poll was cut off";

  // Answered, they are idle and give way.
  server.AnswerForever();
  for (int fd : held) EXPECT_THAT(ReadResponse(fd), StartsWith("HTTP/1.1 200 "));
  EXPECT_THAT(Get(server.port(), "/x"), StartsWith("HTTP/1.1 200 "));
  for (int fd : held) ::close(fd);
}

// A kept-alive connection doing nothing gives its place to a new client when all are taken: the
// one idle the longest.
TEST(HttpServerConnections, OverTheCapTheLongestIdleConnectionGivesWay) {
  HttpLimits limits = SmallLimits();
  limits.max_connections = 4;
  ServerThread server(limits);
  std::vector<int> idle;
  for (int i = 0; i < 3; ++i) idle.push_back(IdleConnection(server.port()));
  int serving = ServingConnection(server);
  ASSERT_TRUE(Eventually([&] { return server.connections() == 4; }));
  // idle[0] serves another request: idle[1] is now the one idle the longest.
  SendAll(idle[0], "GET /x HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(ReadResponse(idle[0]), StartsWith("HTTP/1.1 200 "));

  idle.push_back(IdleConnection(server.port(), "/new"));
  EXPECT_TRUE(WaitClosedByServer(idle[1], 1s));
  EXPECT_FALSE(ClosedByServer(idle[0]));
  EXPECT_FALSE(ClosedByServer(idle[2]));
  idle.push_back(IdleConnection(server.port(), "/newer"));
  EXPECT_TRUE(WaitClosedByServer(idle[2], 1s));
  EXPECT_FALSE(ClosedByServer(idle[0]));
  EXPECT_FALSE(ClosedByServer(idle[3]));
  EXPECT_FALSE(ClosedByServer(serving)) << "a long poll was cut off";
  for (int fd : idle) ::close(fd);
  ::close(serving);
}

// Connections that never sent a whole request give way too; an authenticated client's idle
// connection only after every stranger's.
TEST(HttpServerConnections, OverTheCapAStrangersConnectionGivesWayBeforeAnAuthenticatedOne) {
  HttpLimits limits = SmallLimits();
  limits.max_connections = 3;
  limits.header_timeout = 5s;  // the silent one would otherwise be gone by itself
  ServerThread server(limits);
  int agent = IdleConnection(server.port(), "/login");
  int stranger_idle = IdleConnection(server.port());
  int silent = Connect(server.port());
  ASSERT_TRUE(Eventually([&] { return server.connections() == 3; }));

  int first = ServingConnection(server);
  EXPECT_TRUE(WaitClosedByServer(stranger_idle, 1s));
  int second = ServingConnection(server);
  EXPECT_TRUE(WaitClosedByServer(silent, 1s));
  EXPECT_FALSE(ClosedByServer(agent));
  // Only the authenticated idle one is left to give way.
  EXPECT_THAT(Get(server.port(), "/x"), StartsWith("HTTP/1.1 200 "));
  EXPECT_TRUE(WaitClosedByServer(agent, 1s));
  EXPECT_FALSE(ClosedByServer(first));
  EXPECT_FALSE(ClosedByServer(second));
  for (int fd : {agent, stranger_idle, silent, first, second}) ::close(fd);
}

// A client address (a node running many tasks, or one stranger) holds at most its cap; at the cap
// its own idle connection gives way to its new one, and no other address's.
TEST(HttpServerConnections, ConnectionsPerAddressAreCapped) {
  HttpLimits limits = SmallLimits();
  limits.max_connections_per_address = 2;
  ServerThread server(limits);
  int other_idle = IdleConnection(server.port(), "/x", "127.0.0.2");
  int idle = IdleConnection(server.port());
  int serving = ServingConnection(server);
  ASSERT_TRUE(Eventually([&] { return server.connections() == 3; }));

  int newer = ServingConnection(server);
  EXPECT_TRUE(WaitClosedByServer(idle, 1s));
  EXPECT_FALSE(ClosedByServer(other_idle));

  int fd = Connect(server.port());
  SendAll(fd, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string response = ReadUntilClosed(fd);
  ::close(fd);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 503 "));
  EXPECT_THAT(response, HasSubstr("Retry-After: 1"));
  EXPECT_EQ(Body(response),
            R"({"error":{"code":"unavailable","message":"127.0.0.1 has 2 connections open to )"
            R"(the master, the most one address may; try again later"}})");
  EXPECT_THAT(Get(server.port(), "/x"), StartsWith("HTTP/1.1 503 "));
  // Another address is served, and this one once a connection of its own is idle.
  int elsewhere = IdleConnection(server.port(), "/x", "127.0.0.3");
  EXPECT_FALSE(ClosedByServer(serving));
  EXPECT_FALSE(ClosedByServer(newer));
  server.AnswerForever();
  EXPECT_THAT(ReadResponse(serving), StartsWith("HTTP/1.1 200 "));
  EXPECT_THAT(Get(server.port(), "/x"), StartsWith("HTTP/1.1 200 "));
  EXPECT_TRUE(WaitClosedByServer(serving, 1s));
  EXPECT_FALSE(ClosedByServer(other_idle));
  for (int held : {other_idle, idle, serving, newer, elsewhere}) ::close(held);
}

// utime + stime of a process, in clock ticks.
int64_t CpuTicks(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  return utime + stime;
}

// A server in a child process whose descriptor limit leaves room for a few connections only, so
// that the test's own descriptors are not limited.
struct ChildServer {
  pid_t pid = -1;
  int port = 0;
  ~ChildServer() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

void StartServerShortOfDescriptors(ChildServer& child, int spare) {
  int ports[2];
  ASSERT_EQ(::pipe(ports), 0);
  child.pid = ::fork();
  ASSERT_GE(child.pid, 0);
  if (child.pid == 0) {
    ::close(ports[0]);
    boost::asio::io_context ioc;
    HttpLimits limits = SmallLimits();
    limits.max_connections = 10000;  // descriptors run out first
    HttpServer server(ioc, EchoHandler(ioc), TestBodyLimit, limits);
    if (!server.Listen("127.0.0.1", 0).ok()) ::_exit(1);
    size_t open = 0;
    for ([[maybe_unused]] const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
      ++open;
    }
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = open + spare;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(1);
    int port = server.port();
    if (::write(ports[1], &port, sizeof(port)) != sizeof(port)) ::_exit(1);
    ioc.run();
    ::_exit(0);
  }
  ::close(ports[1]);
  ASSERT_EQ(::read(ports[0], &child.port, sizeof(child.port)),
            static_cast<ssize_t>(sizeof(child.port)));
  ::close(ports[0]);
}

// Out of file descriptors, accept fails at once for as long as connections wait: with every
// connection serving a request, so none can be closed to make room, the server must pause
// between tries, not spin, and serve again once descriptors are free.
TEST(HttpServerConnections, BacksOffWhileOutOfFileDescriptorsAndRecovers) {
  ChildServer child;
  ASSERT_NO_FATAL_FAILURE(StartServerShortOfDescriptors(child, 8));
  std::vector<int> clients;
  for (int i = 0; i < 20; ++i) {
    clients.push_back(Connect(child.port));
    SendAll(clients.back(), "GET /wait?ms=1500 HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  std::this_thread::sleep_for(300ms);  // it has accepted what it can, and fails on the rest
  int64_t before = CpuTicks(child.pid);
  std::this_thread::sleep_for(1s);
  int64_t used = CpuTicks(child.pid) - before;
  const int64_t ticks_per_second = ::sysconf(_SC_CLK_TCK);
  EXPECT_LE(used, ticks_per_second / 10) << "the server spun while out of descriptors";

  for (int fd : clients) ::close(fd);
  std::string response;
  for (int i = 0; i < 100 && response.find("HTTP/1.1 200 ") != 0; ++i) {
    std::this_thread::sleep_for(50ms);
    response = Get(child.port, "/again");
  }
  EXPECT_THAT(response, StartsWith("HTTP/1.1 200 "));
}

// Out of file descriptors, whatever max_connections says, a new client gets the descriptor of
// the connection idle the longest, at once: a stranger's idle sockets cannot shut out an agent.
TEST(HttpServerConnections, OutOfFileDescriptorsAnIdleConnectionGivesWayToANewClient) {
  ChildServer child;
  ASSERT_NO_FATAL_FAILURE(StartServerShortOfDescriptors(child, 8));
  std::vector<int> idle;
  // More than there are descriptors for: each is served, the later ones in the place of the
  // earlier.
  for (int i = 0; i < 12; ++i) {
    auto start = std::chrono::steady_clock::now();
    idle.push_back(IdleConnection(child.port));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 500ms) << i;
  }
  EXPECT_TRUE(ClosedByServer(idle[0])) << "the one idle the longest gave way";
  EXPECT_FALSE(ClosedByServer(idle.back()));
  for (int fd : idle) ::close(fd);
}

TEST(HttpServer, AnUpgradedConnectionCarriesRawBytesBothWaysWithoutTheRequestTimeouts) {
  ServerThread server;
  int fd = Connect(server.port());
  // Bytes sent right behind the request reach the new protocol too.
  SendAll(fd,
          "GET /upgrade HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: shout\r\n\r\n"
          "early");
  std::string seen;
  char buf[4096];
  while (seen.find("EARLY") == std::string::npos) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    ASSERT_GT(n, 0) << seen;
    seen.append(buf, static_cast<size_t>(n));
  }
  EXPECT_THAT(seen, StartsWith("HTTP/1.1 101 Switching Protocols\r\n"));
  EXPECT_THAT(seen, HasSubstr("Upgrade: shout\r\n"));
  EXPECT_THAT(seen, HasSubstr("X-Shout: yes\r\n"));
  EXPECT_THAT(seen, HasSubstr("Connection: Upgrade\r\n"));
  // Quiet for longer than the header timeout (300 ms): an upgraded connection has none.
  std::this_thread::sleep_for(700ms);
  SendAll(fd, "late");
  ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
  ASSERT_EQ(n, 4);
  EXPECT_EQ(std::string(buf, 4), "LATE");
  EXPECT_EQ(server.connections(), 1u);
  ::close(fd);
  EXPECT_TRUE(Eventually([&] { return server.connections() == 0; }));
}

}  // namespace
}  // namespace cohort::api
