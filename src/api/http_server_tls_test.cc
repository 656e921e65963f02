// The HTTP server over TLS: requests, long polls and chunked streams through a verifying
// OpenSSL client, and the limits that hold before and during the handshake (a client that never
// handshakes, one that speaks plain HTTP, the connection cap).
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/http_server.h"
#include "tls/certificates.h"
#include "tls/context.h"

namespace cohort::api {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace std::chrono_literals;

// A CA and a certificate for localhost and 127.0.0.1, in a scratch directory.
class Pki {
 public:
  Pki() {
    char path[] = "/tmp/cohort-https-test-XXXXXX";
    EXPECT_NE(::mkdtemp(path), nullptr);
    dir_ = path;
    EXPECT_TRUE(tls::CreateCa(dir_, false).ok());
    EXPECT_TRUE(
        tls::IssueCertificate(tls::IssueRequest{dir_, "server", {"localhost", "127.0.0.1"}}).ok());
  }
  ~Pki() { std::filesystem::remove_all(dir_); }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
};

// /wait answers after 800 ms (a long poll), /stream sends two chunks 200 ms apart, /hold never
// answers (counting those it holds in `held`), anything else answers with the size of its body.
Handler TestHandler(net::io_context& ioc, std::shared_ptr<std::atomic<int>> held) {
  auto holding = std::make_shared<std::vector<std::shared_ptr<Responder>>>();
  return [&ioc, held, holding](HttpRequest request, std::shared_ptr<Responder> responder) {
    if (request.path == "/hold") {
      holding->push_back(std::move(responder));
      ++*held;
      return;
    }
    if (request.path == "/wait" || request.path == "/stream") {
      bool stream = request.path == "/stream";
      if (stream) {
        responder->StartStream(200, "text/plain");
        responder->WriteChunk("one\n", nullptr);
      }
      auto timer = std::make_shared<net::steady_timer>(ioc, stream ? 200ms : 800ms);
      timer->async_wait([timer, responder, stream](const boost::system::error_code&) {
        if (!stream) return responder->Send(HttpResponse{200, "text/plain", "waited"});
        responder->WriteChunk("two\n", nullptr);
        responder->EndStream();
      });
      return;
    }
    responder->Send(HttpResponse{200, "text/plain", fmt::format("got {}", request.body.size())});
  };
}

HttpLimits TestLimits() {
  HttpLimits limits;
  limits.max_connections = 8;
  limits.header_timeout = 300ms;
  limits.idle_timeout = 5s;
  return limits;
}

// An HTTPS server on its own io_context thread, on a free port of 127.0.0.1.
class TlsServerThread {
 public:
  TlsServerThread(const Pki& pki, HttpLimits limits = TestLimits())
      : server_(
            ioc_, TestHandler(ioc_, held_), [](auto, auto) { return uint64_t{64 * 1024}; },
            limits) {
    auto context = tls::NewServerContext(pki.File("server.crt"), pki.File("server.key"));
    EXPECT_TRUE(context.ok()) << context.status().ToString();
    server_.UseTls(*context);
    Status s = server_.Listen("127.0.0.1", 0);
    EXPECT_TRUE(s.ok()) << s.ToString();
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~TlsServerThread() {
    work_.reset();
    ioc_.stop();
    thread_.join();
  }
  int port() const { return server_.port(); }
  // /hold requests the server has.
  int held() const { return *held_; }
  size_t connections() {
    std::promise<size_t> count;
    net::post(ioc_, [&] { count.set_value(server_.connections()); });
    return count.get_future().get();
  }

 private:
  net::io_context ioc_;
  std::shared_ptr<std::atomic<int>> held_ = std::make_shared<std::atomic<int>>(0);
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_{
      net::make_work_guard(ioc_)};
  HttpServer server_;
  std::thread thread_;
};

// A verifying TLS client; every step gives up after 5 s, so a hang fails instead of blocking.
class TlsClient {
 public:
  TlsClient(const Pki& pki, int port, const std::string& host = "localhost") {
    auto context = tls::NewClientContext(pki.File("ca.crt"));
    EXPECT_TRUE(context.ok()) << context.status().ToString();
    context_ = *context;
    stream_.emplace(ioc_, *context_);
    stream_->set_verify_callback(net::ssl::host_name_verification(host));
    boost::system::error_code ec;
    stream_->next_layer().connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
    EXPECT_FALSE(ec) << ec.message();
  }

  boost::system::error_code Handshake() {
    return Run([&](auto done) { stream_->async_handshake(net::ssl::stream_base::client, done); });
  }

  boost::system::error_code Send(const std::string& raw) {
    return Run([&](auto done) {
      net::async_write(*stream_, net::buffer(raw),
                       [done](boost::system::error_code ec, size_t) mutable { done(ec); });
    });
  }

  // One whole response (Content-Length or chunked); status 0 if none came.
  http::response<http::string_body> Read() {
    http::response<http::string_body> res;
    auto ec = Run([&](auto done) {
      http::async_read(*stream_, buffer_, res,
                       [done](boost::system::error_code ec, size_t) mutable { done(ec); });
    });
    EXPECT_FALSE(ec) << ec.message();
    if (ec) res.result(0);
    return res;
  }

  http::response<http::string_body> Get(const std::string& target) {
    EXPECT_FALSE(Send(fmt::format("GET {} HTTP/1.1\r\nHost: localhost\r\n\r\n", target)));
    return Read();
  }

 private:
  template <typename Start>
  boost::system::error_code Run(Start start) {
    std::optional<boost::system::error_code> result;
    start([&result](boost::system::error_code ec) { result = ec; });
    ioc_.restart();
    ioc_.run_for(5s);
    return result.value_or(net::error::timed_out);
  }

  net::io_context ioc_;
  std::shared_ptr<net::ssl::context> context_;
  std::optional<net::ssl::stream<tcp::socket>> stream_;
  boost::beast::flat_buffer buffer_;
};

// A plain socket: reads give up after 5 s.
int ConnectRaw(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

std::string ReadUntilClosed(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

// The server closes its side a moment after the client has seen the end of the connection.
bool ConnectionsBecome(TlsServerThread& server, size_t n) {
  for (int i = 0; i < 200 && server.connections() != n; ++i) std::this_thread::sleep_for(10ms);
  return server.connections() == n;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(HttpsServer, ServesRequestsOnAKeptAliveConnectionToAVerifyingClient) {
  Pki pki;
  TlsServerThread server(pki);
  TlsClient client(pki, server.port());
  ASSERT_FALSE(client.Handshake());
  auto first = client.Get("/echo");
  EXPECT_EQ(first.result_int(), 200);
  EXPECT_EQ(first.body(), "got 0");
  ASSERT_FALSE(
      client.Send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello"));
  auto second = client.Read();
  EXPECT_EQ(second.result_int(), 200);
  EXPECT_EQ(second.body(), "got 5");
  EXPECT_EQ(server.connections(), 1u);

  // By IP address: the certificate names 127.0.0.1 too.
  TlsClient by_ip(pki, server.port(), "127.0.0.1");
  ASSERT_FALSE(by_ip.Handshake());
  EXPECT_EQ(by_ip.Get("/echo").body(), "got 0");
}

TEST(HttpsServer, LongPollsAndChunkedStreamsWorkOverTls) {
  Pki pki;
  TlsServerThread server(pki);
  TlsClient client(pki, server.port());
  ASSERT_FALSE(client.Handshake());
  auto start = std::chrono::steady_clock::now();
  auto waited = client.Get("/wait");  // outlives the 300 ms header timeout
  EXPECT_GE(SecondsSince(start), 0.75);
  EXPECT_EQ(waited.body(), "waited");

  TlsClient streaming(pki, server.port());
  ASSERT_FALSE(streaming.Handshake());
  auto stream = streaming.Get("/stream");
  EXPECT_EQ(stream.result_int(), 200);
  EXPECT_TRUE(stream.chunked());
  EXPECT_EQ(stream.body(), "one\ntwo\n");
}

TEST(HttpsServer, AClientOfAnotherCaIsRefusedAndTheServerGoesOn) {
  Pki pki;
  Pki other;
  TlsServerThread server(pki);
  TlsClient stranger(other, server.port());
  auto ec = stranger.Handshake();
  ASSERT_TRUE(ec);
  EXPECT_THAT(ec.message(), HasSubstr("certificate verify failed"));
  TlsClient client(pki, server.port(), "127.0.0.1");
  ASSERT_FALSE(client.Handshake());
  EXPECT_EQ(client.Get("/echo").result_int(), 200);
}

TEST(HttpsServer, PlainHttpToTheTlsPortIsToldSoAtOnceInPlainHttp) {
  Pki pki;
  TlsServerThread server(pki);
  for (const char* method : {"GET", "POST", "DELETE"}) {
    int fd = ConnectRaw(server.port());
    auto start = std::chrono::steady_clock::now();
    std::string request =
        fmt::format("{} /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", method);
    ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    std::string response = ReadUntilClosed(fd);
    ::close(fd);
    EXPECT_LT(SecondsSince(start), 1.0) << method;
    EXPECT_THAT(response, StartsWith("HTTP/1.1 400 Bad Request\r\n")) << method;
    EXPECT_THAT(response, HasSubstr("this port serves HTTPS, not plain HTTP: use an https:// "
                                    "master URL"));
  }
  EXPECT_TRUE(ConnectionsBecome(server, 0));
}

TEST(HttpsServer, AConnectionThatNeverFinishesItsHandshakeIsClosedAfterTheHeaderTimeout) {
  Pki pki;
  TlsServerThread server(pki);
  int silent = ConnectRaw(server.port());
  int stalled = ConnectRaw(server.port());
  // The first bytes of a TLS record header, and then nothing.
  const unsigned char partial[] = {0x16, 0x03, 0x01};
  ASSERT_EQ(::send(stalled, partial, sizeof(partial), MSG_NOSIGNAL), 3);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ReadUntilClosed(silent), "");
  EXPECT_EQ(ReadUntilClosed(stalled), "");
  double elapsed = SecondsSince(start);
  EXPECT_GE(elapsed, 0.25);  // the header timeout is 300 ms
  EXPECT_LT(elapsed, 2.0);
  ::close(silent);
  ::close(stalled);
  EXPECT_TRUE(ConnectionsBecome(server, 0));
}

TEST(HttpsServer, AHeaderTrickledAfterTheHandshakeIsCutOffWith408) {
  Pki pki;
  TlsServerThread server(pki);
  TlsClient client(pki, server.port());
  ASSERT_FALSE(client.Handshake());
  auto start = std::chrono::steady_clock::now();
  ASSERT_FALSE(client.Send("GET /echo HTTP/1.1\r\nHost: local"));
  auto response = client.Read();
  EXPECT_EQ(response.result_int(), 408);
  EXPECT_THAT(response.body(), HasSubstr("the request header did not arrive within"));
  EXPECT_LT(SecondsSince(start), 2.0);
}

// A connection still handshaking holds a place, and gives it to a new one when places run
// short (it has not sent a request yet), the one handshaking the longest first.
TEST(HttpsServer, ConnectionsStillHandshakingCountAgainstTheCapAndGiveWay) {
  Pki pki;
  HttpLimits limits = TestLimits();
  limits.max_connections = 2;
  limits.header_timeout = 5s;  // the silent ones would otherwise be gone by themselves
  TlsServerThread server(pki, limits);
  int a = ConnectRaw(server.port());
  int b = ConnectRaw(server.port());
  ASSERT_TRUE(ConnectionsBecome(server, 2));
  auto start = std::chrono::steady_clock::now();
  TlsClient served(pki, server.port());
  ASSERT_FALSE(served.Handshake());
  EXPECT_EQ(served.Get("/echo").result_int(), 200);
  EXPECT_EQ(ReadUntilClosed(a), "");
  EXPECT_LT(SecondsSince(start), 2.0) << "closed to make room, not at the header timeout";
  EXPECT_EQ(server.connections(), 2u);

  // With every place serving a request, one more is served its 503 over TLS, once its
  // handshake is done.
  std::vector<std::unique_ptr<TlsClient>> holding;
  for (int i = 0; i < 2; ++i) {
    holding.push_back(std::make_unique<TlsClient>(pki, server.port()));
    ASSERT_FALSE(holding.back()->Handshake());
    ASSERT_FALSE(holding.back()->Send("GET /hold HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    for (int wait = 0; wait < 200 && server.held() <= i; ++wait) std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(server.held(), 2);
  EXPECT_EQ(ReadUntilClosed(b), "");
  TlsClient refused(pki, server.port());
  ASSERT_FALSE(refused.Handshake());
  auto response = refused.Read();
  EXPECT_EQ(response.result_int(), 503);
  EXPECT_THAT(response.body(), HasSubstr("2 connections open, its limit"));
  ::close(a);
  ::close(b);
}

}  // namespace
}  // namespace cohort::api
