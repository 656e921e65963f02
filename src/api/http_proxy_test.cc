// The master as a proxy (api/http_proxy.h), between two of Cohort's own HTTP servers on one
// io_context: what passes to the backend and back, an upgrade spliced both ways, and the
// answers for a backend that is gone, slow or says too much.
#include "api/http_proxy.h"

#include "api/shout_test_fixture.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cctype>
#include <future>
#include <optional>
#include <string>
#include <thread>

namespace cohort::api {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace std::chrono_literals;

uint64_t AnyBody(std::string_view, std::string_view) { return 1 << 20; }

// The backend: /echo answers what it got, with two cookies; /big answers 2 MiB of text, /bightml
// 2 MiB of HTML; /broken starts an answer and breaks it off; /slow never answers;
// /ws switches to a protocol that answers every chunk in capitals.
Handler Backend(boost::asio::io_context& ioc) {
  return [&ioc](HttpRequest request, std::shared_ptr<Responder> responder) {
    if (request.path == "/ws") {
      return responder->Upgrade("shout", {{"Sec-Test", "accepted"}}, ServeShout);
    }
    if (request.path == "/slow") {
      auto timer = std::make_shared<boost::asio::steady_timer>(ioc, 5s);
      timer->async_wait([timer, responder](const boost::system::error_code&) {
        responder->Send(HttpResponse{200, "text/plain", "late"});
      });
      return;
    }
    if (request.path == "/big" || request.path == "/bightml") {
      return responder->Send(HttpResponse{200,
                                          request.path == "/big" ? "text/plain" : "text/html",
                                          std::string(2 << 20, 'x'),
                                          {{"Content-Disposition", "attachment"}}});
    }
    if (request.path == "/broken") {
      responder->StartStream(200, "application/octet-stream");
      responder->WriteChunk("the first part", nullptr);
      return responder->AbortStream();
    }
    std::string seen = request.method + " " + request.path + "?" +
                       (request.query.count("q") ? request.query["q"] : "") +
                       " body=" + request.body;
    for (const char* h : {"authorization", "x-backend-token", "x-custom", "host"}) {
      auto it = request.headers.find(h);
      seen += std::string(" ") + h + "=" + (it == request.headers.end() ? "-" : it->second);
    }
    responder->Send(HttpResponse{
        201, "text/html", seen, {{"Set-Cookie", "a=1; Path=/"}, {"Set-Cookie", "b=2; Path=/"}}});
  };
}

class ProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(backend_.Listen("127.0.0.1", 0).ok());
    ASSERT_TRUE(front_.Listen("127.0.0.1", 0).ok());
    thread_ = std::thread([this] { ioc_.run(); });
  }
  void TearDown() override {
    work_.reset();
    ioc_.stop();
    thread_.join();
  }

  // Everything after the proxy's prefix "/p" goes to the backend, with its token.
  Handler Front() {
    return [this](HttpRequest request, std::shared_ptr<Responder> responder) {
      ProxyTarget target{"the test backend",
                         "127.0.0.1",
                         backend_port_,
                         request.path.substr(2),
                         {{"X-Backend-Token", "secret"}}};
      if (request.query.count("q")) target.path += "?q=" + request.query["q"];
      ProxyLimits limits;
      limits.max_response_bytes = 1 << 20;
      limits.whole_types = {"text/html"};
      limits.answer_timeout = 1s;
      Proxy(ioc_, request, responder, target, limits,
            [this](std::string_view) { ++client_chunks_; });
    };
  }

  // One request on a new connection, and everything until the server closes it or 5 s pass.
  std::string Exchange(const std::string& request, bool keep_open = false, int* fd_out = nullptr) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval timeout{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(front_.port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    std::string out;
    char buf[65536];
    while (true) {
      ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
      if (keep_open && out.find("\r\n\r\n") != std::string::npos) break;
    }
    if (fd_out) {
      *fd_out = fd;
    } else {
      ::close(fd);
    }
    return out;
  }

  boost::asio::io_context ioc_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_{
      boost::asio::make_work_guard(ioc_)};
  HttpServer backend_{ioc_, Backend(ioc_), AnyBody};
  int backend_port_ = 0;
  HttpServer front_{ioc_,
                    [this](HttpRequest r, std::shared_ptr<Responder> w) {
                      backend_port_ = backend_.port();
                      Front()(std::move(r), std::move(w));
                    },
                    AnyBody};
  std::thread thread_;
  std::atomic<int> client_chunks_ = 0;
};

TEST_F(ProxyTest, ARequestGoesWithItsBodyAndHeadersLessTheCallersCredential) {
  std::string answer = Exchange(
      "POST /p/echo?q=1 HTTP/1.1\r\nHost: master\r\nAuthorization: Bearer cohort-token\r\n"
      "X-Custom: kept\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 201"));
  EXPECT_THAT(answer, HasSubstr("POST /echo?1 body=hello"));
  EXPECT_THAT(answer, HasSubstr("authorization=- x-backend-token=secret x-custom=kept"));
  EXPECT_THAT(answer, HasSubstr(fmt::format("host=127.0.0.1:{}", backend_.port())));
  EXPECT_THAT(answer, HasSubstr("Set-Cookie: a=1; Path=/\r\n"));
  EXPECT_THAT(answer, HasSubstr("Set-Cookie: b=2; Path=/\r\n"));
  EXPECT_THAT(answer, HasSubstr("Content-Type: text/html"));
}

TEST_F(ProxyTest, AnUpgradeIsSplicedBothWaysWithTheBackendsHeaders) {
  int fd = -1;
  std::string head = Exchange(
      "GET /p/ws HTTP/1.1\r\nHost: master\r\nConnection: Upgrade\r\nUpgrade: shout\r\n\r\n", true,
      &fd);
  EXPECT_THAT(head, StartsWith("HTTP/1.1 101"));
  EXPECT_THAT(head, HasSubstr("Sec-Test: accepted"));
  for (const char* word : {"hello", "again"}) {
    ASSERT_EQ(::send(fd, word, 5, MSG_NOSIGNAL), 5);
    char buf[16];
    ASSERT_EQ(::recv(fd, buf, sizeof(buf), 0), 5);
    std::string upper(word);
    for (char& c : upper) c = static_cast<char>(std::toupper(c));
    EXPECT_EQ(std::string(buf, 5), upper);
  }
  EXPECT_EQ(client_chunks_, 2);
  ::close(fd);
}

// An answer larger than the bound (a file downloaded) is relayed chunk by chunk, whole; one that
// breaks off is cut short for the client too, never ended as if complete.
TEST_F(ProxyTest, ALargeAnswerIsRelayedAsItComesAndABrokenOneIsCutShort) {
  std::string big = Exchange("GET /p/big HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(big, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(big, HasSubstr("Transfer-Encoding: chunked"));
  EXPECT_THAT(big, HasSubstr("Content-Disposition: attachment"));
  const std::string body = big.substr(big.find("\r\n\r\n"));
  EXPECT_EQ(std::count(body.begin(), body.end(), 'x'), 2 << 20) << "every byte of the 2 MiB";
  EXPECT_TRUE(big.ends_with("\r\n0\r\n\r\n")) << "and its end";
  std::string broken = Exchange("GET /p/broken HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(broken, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(broken, HasSubstr("the first part"));
  EXPECT_FALSE(broken.ends_with("0\r\n\r\n")) << "cut short, not ended: " << broken;
}

TEST_F(ProxyTest, AGoneSlowOrTooTalkativeBackendIsAnswered) {
  std::string big = Exchange("GET /p/bightml HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(big, StartsWith("HTTP/1.1 502")) << big.substr(0, 300);
  EXPECT_THAT(big, HasSubstr("the test backend (127.0.0.1:"));
  EXPECT_THAT(big, HasSubstr("answered too much: more than 1048576 bytes"));
  std::string slow = Exchange("GET /p/slow HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(slow, StartsWith("HTTP/1.1 504"));
  EXPECT_THAT(slow, HasSubstr("did not answer: within 1s"));
  std::promise<void> stopped;
  boost::asio::post(ioc_, [&] {
    backend_.Stop();
    stopped.set_value();
  });
  stopped.get_future().get();
  std::string gone = Exchange("GET /p/echo HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(gone, StartsWith("HTTP/1.1 502"));
  EXPECT_THAT(gone, HasSubstr("cannot reach"));
}

}  // namespace
}  // namespace cohort::api
