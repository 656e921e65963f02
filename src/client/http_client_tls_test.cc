// The client over TLS against a real OpenSSL server: requests and streams with the cluster's CA,
// and what it says when the certificate is of another CA, for another host, or the server
// speaks plain HTTP.
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
#include <string>
#include <thread>

#include "client/http_client.h"
#include "tls/certificates.h"
#include "tls/context.h"

namespace cohort::client {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// A CA in a scratch directory, and certificates it issues there.
class Pki {
 public:
  Pki() {
    char path[] = "/tmp/cohort-client-tls-XXXXXX";
    EXPECT_NE(::mkdtemp(path), nullptr);
    dir_ = path;
    EXPECT_TRUE(tls::CreateCa(dir_, false).ok());
  }
  ~Pki() { std::filesystem::remove_all(dir_); }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }
  void Issue(const std::string& name, std::vector<std::string> hosts) const {
    auto issued = tls::IssueCertificate(tls::IssueRequest{dir_, name, std::move(hosts)});
    EXPECT_TRUE(issued.ok()) << issued.status().ToString();
  }

 private:
  std::string dir_;
};

// A TLS server on 127.0.0.1 that serves one connection at a time, on its own thread:
// /stream: a chunked answer in two chunks; /close: answers, then closes the connection (as a
// server does to an idle kept-alive one); /hang: never answers; else "hello".
class TlsTestServer {
 public:
  TlsTestServer(const std::string& cert, const std::string& key) {
    auto context = tls::NewServerContext(cert, key);
    EXPECT_TRUE(context.ok()) << context.status().ToString();
    context_ = *context;
    acceptor_.open(tcp::v4());
    acceptor_.bind(tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    acceptor_.listen();
    thread_ = std::thread([this] { Run(); });
  }
  ~TlsTestServer() {
    stopping_ = true;
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);  // wakes the blocked accept
    int fd = current_fd_.load();
    if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
    thread_.join();
  }
  int port() const { return acceptor_.local_endpoint().port(); }
  std::string url(const std::string& host = "127.0.0.1") const {
    return fmt::format("https://{}:{}", host, port());
  }
  int accepted() const { return accepted_; }

 private:
  void Run() {
    while (!stopping_) {
      boost::system::error_code ec;
      net::ssl::stream<tcp::socket> stream(ioc_, *context_);
      acceptor_.accept(stream.next_layer(), ec);
      if (ec) return;
      ++accepted_;
      current_fd_ = stream.next_layer().native_handle();
      stream.handshake(net::ssl::stream_base::server, ec);
      if (!ec) Serve(stream);
      current_fd_ = -1;
    }
  }

  void Serve(net::ssl::stream<tcp::socket>& stream) {
    boost::beast::flat_buffer buffer;
    while (true) {
      boost::system::error_code ec;
      http::request<http::string_body> req;
      http::read(stream, buffer, req, ec);
      if (ec) return;
      std::string target(req.target());
      if (target == "/hang") continue;
      if (target == "/stream") {
        std::string body =
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: "
            "chunked\r\n\r\n4\r\none\n\r\n";
        net::write(stream, net::buffer(body), ec);
        std::this_thread::sleep_for(50ms);
        net::write(stream, net::buffer(std::string("4\r\ntwo\n\r\n0\r\n\r\n")), ec);
        return;
      }
      http::response<http::string_body> res(http::status::ok, 11);
      res.set(http::field::content_type, "text/plain");
      res.body() = "hello";
      res.keep_alive(true);
      res.prepare_payload();
      http::write(stream, res, ec);
      if (ec || target == "/close") return;  // no close_notify, like the master
    }
  }

  net::io_context ioc_;
  std::shared_ptr<net::ssl::context> context_;
  tcp::acceptor acceptor_{ioc_};
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> current_fd_{-1};
  std::atomic<int> accepted_{0};
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(HttpsClient, RequestsAndStreamsOverOneVerifiedConnection) {
  Pki pki;
  pki.Issue("master", {"localhost", "127.0.0.1"});
  TlsTestServer server(pki.File("master.crt"), pki.File("master.key"));
  for (const std::string host : {"127.0.0.1", "localhost"}) {  // an IP entry, a DNS entry
    auto client = HttpClient::Create(server.url(host), TlsOptions{pki.File("ca.crt")});
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    for (int i = 0; i < 2; ++i) {
      auto result = (*client)->Request("GET", "/hello");
      ASSERT_TRUE(result.ok()) << result.status().ToString();
      EXPECT_EQ(result->status, 200);
      EXPECT_EQ(result->body, "hello");
    }
    std::string streamed;
    auto stream = (*client)->Stream("/stream", [&](std::string_view data) {
      streamed.append(data);
      return true;
    });
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    EXPECT_EQ(streamed, "one\ntwo\n");
  }
  EXPECT_EQ(server.accepted(), 4);  // per host: one for both requests, one for the stream
}

TEST(HttpsClient, SendsAgainWhenTheServerClosedAKeptAliveConnection) {
  Pki pki;
  pki.Issue("master", {"127.0.0.1"});
  TlsTestServer server(pki.File("master.crt"), pki.File("master.key"));
  auto client = HttpClient::Create(server.url(), TlsOptions{pki.File("ca.crt")});
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Request("GET", "/close").ok());
  std::this_thread::sleep_for(50ms);  // the close reaches the client's socket
  auto again = (*client)->Request("GET", "/hello");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->body, "hello");
  EXPECT_EQ(server.accepted(), 2);
}

TEST(HttpsClient, ACertificateOfAnotherCaIsRefusedSayingWhatToDo) {
  Pki pki;
  Pki other;
  pki.Issue("master", {"127.0.0.1"});
  TlsTestServer server(pki.File("master.crt"), pki.File("master.key"));

  auto wrong_ca = HttpClient::Create(server.url(), TlsOptions{other.File("ca.crt")});
  ASSERT_TRUE(wrong_ca.ok());
  auto result = (*wrong_ca)->Request("GET", "/hello");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(result.status().message(),
            fmt::format("certificate verify failed for {}: unknown CA (not the one in {}); pass "
                        "--ca-file with the cluster's CA (cohortd cert ca)",
                        server.url(), other.File("ca.crt")));

  auto system_cas = HttpClient::Create(server.url());
  ASSERT_TRUE(system_cas.ok());
  result = (*system_cas)->Request("GET", "/hello");
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(),
              HasSubstr("unknown CA (not one of the system's); pass --ca-file with the "
                        "cluster's CA (cohortd cert ca)"));
}

TEST(HttpsClient, ACertificateForOtherHostsIsRefusedNamingThem) {
  Pki pki;
  pki.Issue("master", {"master.example.com", "10.9.9.9"});
  TlsTestServer server(pki.File("master.crt"), pki.File("master.key"));
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    auto client = HttpClient::Create(server.url(host), TlsOptions{pki.File("ca.crt")});
    ASSERT_TRUE(client.ok());
    auto result = (*client)->Request("GET", "/hello");
    ASSERT_FALSE(result.ok()) << host;
    EXPECT_EQ(result.status().message(),
              fmt::format("certificate verify failed for {}: the certificate is not for {} (it "
                          "names DNS:master.example.com, IP Address:10.9.9.9); connect by one of "
                          "those, or give the master a certificate that names {} (cohortd cert "
                          "issue --host)",
                          server.url(host), host, host));
  }
}

// Answers whatever arrives with a plain-HTTP 400 and closes, as the master does without TLS.
class PlainHttpServer {
 public:
  PlainHttpServer() {
    acceptor_.open(tcp::v4());
    acceptor_.bind(tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    acceptor_.listen();
    thread_ = std::thread([this] {
      boost::system::error_code ec;
      tcp::socket socket(ioc_);
      acceptor_.accept(socket, ec);
      if (ec) return;
      char buf[512];
      socket.read_some(net::buffer(buf), ec);
      std::string answer =
          "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      net::write(socket, net::buffer(answer), ec);
    });
  }
  ~PlainHttpServer() {
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    thread_.join();
  }
  int port() const { return acceptor_.local_endpoint().port(); }

 private:
  net::io_context ioc_;
  tcp::acceptor acceptor_{ioc_};
  std::thread thread_;
};

TEST(HttpsClient, AnHttpsUrlForAPlainHttpServerFailsAtOnceSayingSo) {
  PlainHttpServer server;
  auto client = HttpClient::Create(fmt::format("https://127.0.0.1:{}", server.port()));
  ASSERT_TRUE(client.ok());
  auto start = std::chrono::steady_clock::now();
  auto result = (*client)->Request("GET", "/hello", {}, "application/json", 10s);
  EXPECT_LT(SecondsSince(start), 2.0);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(result.status().message(), HasSubstr("the master there seems to serve plain HTTP"));
  EXPECT_THAT(result.status().message(), HasSubstr("use an http:// URL"));
}

TEST(HttpsClient, CancelEndsARequestWaitingOverTls) {
  Pki pki;
  pki.Issue("master", {"127.0.0.1"});
  TlsTestServer server(pki.File("master.crt"), pki.File("master.key"));
  auto client = HttpClient::Create(server.url(), TlsOptions{pki.File("ca.crt")});
  ASSERT_TRUE(client.ok());
  auto start = std::chrono::steady_clock::now();
  auto request = std::async(std::launch::async, [&] {
    return (*client)->Request("GET", "/hang", {}, "application/json", 30s);
  });
  while (request.wait_for(20ms) != std::future_status::ready) (*client)->Cancel();
  auto result = request.get();
  EXPECT_LT(SecondsSince(start), 5.0);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("cancelled"));
}

TEST(HttpsClient, UrlsAndCaFilesAreCheckedWhenTheClientIsMade) {
  auto ftp = HttpClient::Create("ftp://127.0.0.1:7420");
  ASSERT_FALSE(ftp.ok());
  EXPECT_THAT(ftp.status().message(), HasSubstr("must start with http:// or https://"));
  auto missing = HttpClient::Create("https://127.0.0.1:7420", TlsOptions{"/nonexistent/ca.crt"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("--ca-file /nonexistent/ca.crt: cannot read it: No such file"));
  // Plain HTTP has no use for a CA file: one set for other clusters does not get in the way.
  EXPECT_TRUE(HttpClient::Create("http://127.0.0.1:7420", TlsOptions{"/nonexistent/ca.crt"}).ok());
}

}  // namespace
}  // namespace cohort::client
