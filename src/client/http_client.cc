#include "client/http_client.h"

#include <fmt/format.h>

#include <openssl/ssl.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <limits>
#include <optional>

#include "client/tls_errors.h"
#include "tls/certificates.h"
#include "tls/context.h"
#include "tls/openssl.h"

namespace cohort::client {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// A kept-alive connection that the server has closed meanwhile fails the next request this way,
// before any of the answer arrives (over TLS, a close without close_notify is "truncated").
bool IsStale(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == net::error::connection_reset ||
         ec == net::error::broken_pipe || ec == net::error::eof ||
         ec == net::ssl::error::stream_truncated;
}

}  // namespace

struct HttpClient::Impl {
  std::string base_url;
  std::string host;
  std::string port;
  // https://: the context (trusted CAs), and the CA file it came from, for error messages.
  std::shared_ptr<net::ssl::context> tls;
  std::string ca_file;
  net::io_context ioc;
  // The connection: one of the two, or neither.
  std::optional<beast::tcp_stream> plain;
  std::optional<TlsStream> secure;
  beast::flat_buffer buffer;
  // Sent with every request (SetHeader), e.g. the Authorization of the caller's token.
  std::vector<std::pair<std::string, std::string>> fixed_headers;
  // Set by Cancel() from any thread; cleared by the requesting thread as a request starts.
  std::atomic<bool> cancel_requested{false};
  // The names the server's certificate carries, when none matched `host`.
  std::string names_seen;

  bool connected() const { return plain || secure; }
  beast::tcp_stream& Tcp() { return secure ? beast::get_lowest_layer(*secure) : *plain; }

  // Runs `f` on the connection's stream, whichever kind it is.
  template <typename F>
  beast::error_code WithStream(F&& f) {
    return secure ? f(*secure) : f(*plain);
  }

  // Runs one asynchronous operation to completion on the private io_context.
  template <typename Start>
  beast::error_code Run(Start&& start) {
    beast::error_code result;
    bool done = false;
    start([&](beast::error_code ec, auto&&...) {
      result = ec;
      done = true;
    });
    ioc.restart();
    while (!done && ioc.run_one() > 0) {
    }
    return result;
  }

  Status Connect(Duration timeout) {
    if (connected() && Tcp().socket().is_open()) return Status::Ok();
    tcp::resolver resolver(ioc);
    beast::error_code ec;
    auto results = resolver.resolve(host, port, ec);
    if (ec) {
      return Status::Unavailable(fmt::format("cannot resolve {}: {}", host, ec.message()));
    }
    if (tls) {
      secure.emplace(ioc, *tls);
    } else {
      plain.emplace(ioc);
    }
    buffer.clear();
    Tcp().expires_after(timeout);
    ec = Run([&](auto handler) {
      Tcp().async_connect(
          results, [handler](beast::error_code e, const tcp::endpoint&) mutable { handler(e); });
    });
    if (ec) {
      Drop();
      return Status::Unavailable(
          fmt::format("cannot reach the Cohort master at {}: {}; is it running (cohort up)?",
                      base_url, ec.message()));
    }
    beast::error_code ignored;
    Tcp().socket().set_option(tcp::no_delay(true), ignored);
    return tls ? Handshake(timeout) : Status::Ok();
  }

  // The TLS handshake, verifying the master's certificate: its chain against the trusted CAs
  // (OpenSSL), its names against `host` (Asio's host_name_verification: an IP address against
  // the certificate's IP entries, a name against its DNS entries).
  Status Handshake(Duration timeout) {
    std::string name = host;
    if (name.size() > 2 && name.front() == '[' && name.back() == ']') {
      name = name.substr(1, name.size() - 2);
    }
    const bool is_address = tls::IsIpAddress(name);
    // SNI carries names only, never addresses (RFC 6066).
    if (!is_address) SSL_set_tlsext_host_name(secure->native_handle(), name.c_str());
    names_seen.clear();
    secure->set_verify_callback([this, is_address, check = net::ssl::host_name_verification(name)](
                                    bool preverified, net::ssl::verify_context& ctx) {
      if (!preverified) return false;  // OpenSSL's reason stands
      if (check(preverified, ctx)) return true;
      // The chain was good; the certificate is for other names. Say so in the result.
      X509_STORE_CTX* store = ctx.native_handle();
      names_seen = tls::SubjectAltNames(X509_STORE_CTX_get_current_cert(store));
      X509_STORE_CTX_set_error(
          store, is_address ? X509_V_ERR_IP_ADDRESS_MISMATCH : X509_V_ERR_HOSTNAME_MISMATCH);
      return false;
    });
    Tcp().expires_after(timeout);
    beast::error_code ec = Run([&](auto handler) {
      secure->async_handshake(net::ssl::stream_base::client,
                              [handler](beast::error_code e) mutable { handler(e); });
    });
    if (!ec) return Status::Ok();
    Status failure =
        ec == beast::error::timeout || (ec == net::error::operation_aborted && cancel_requested)
            ? Failure(ec, "")
            : HandshakeFailure(base_url, ec, SSL_get_verify_result(secure->native_handle()), name,
                               names_seen, ca_file);
    Drop();
    return failure;
  }

  void Drop() {
    if (connected()) {
      beast::error_code ec;
      Tcp().socket().shutdown(tcp::socket::shutdown_both, ec);
    }
    plain.reset();
    secure.reset();
    buffer.clear();
  }

  Status Failure(beast::error_code ec, std::string_view target) {
    Drop();
    if (ec == net::error::operation_aborted && cancel_requested) {
      return Status::Unavailable(fmt::format("{}{}: cancelled", base_url, target));
    }
    if (ec == beast::error::timeout) {
      return Status::DeadlineExceeded(fmt::format("{}{}: timed out", base_url, target));
    }
    return Status::Unavailable(fmt::format("{}{}: {}", base_url, target, ec.message()));
  }

  // Sends `req` and reads the answer's header into `parser`, within 30 s.
  template <typename Parser>
  beast::error_code SendAndReadHeader(http::request<http::string_body>& req, Parser& parser) {
    Tcp().expires_after(std::chrono::seconds(30));
    beast::error_code ec = WithStream([&](auto& stream) {
      return Run([&](auto handler) {
        http::async_write(stream, req,
                          [handler](beast::error_code e, size_t) mutable { handler(e); });
      });
    });
    if (ec) return ec;
    return WithStream([&](auto& stream) {
      return Run([&](auto handler) {
        http::async_read_header(stream, buffer, parser,
                                [handler](beast::error_code e, size_t) mutable { handler(e); });
      });
    });
  }

  http::request<http::string_body> MakeRequest(std::string_view method, std::string_view target,
                                               std::string_view body,
                                               std::string_view content_type) {
    http::request<http::string_body> req;
    req.method(http::string_to_verb(beast::string_view(method.data(), method.size())));
    req.target(beast::string_view(target.data(), target.size()));
    req.version(11);
    // With the port (RFC 9110, 7.2): the master builds links back to itself from it.
    req.set(http::field::host, host + ":" + port);
    req.set(http::field::user_agent, "cohort");
    req.keep_alive(true);
    for (const auto& [name, value] : fixed_headers) req.set(name, value);
    if (!body.empty() || method == "POST") {
      req.set(http::field::content_type,
              beast::string_view(content_type.data(), content_type.size()));
      req.body() = std::string(body);
      req.prepare_payload();
    }
    return req;
  }
};

HttpClient::HttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpClient::~HttpClient() = default;

StatusOr<std::unique_ptr<HttpClient>> HttpClient::Create(std::string_view base_url,
                                                         const TlsOptions& tls) {
  std::string url(base_url);
  while (!url.empty() && url.back() == '/') url.pop_back();
  const bool https = url.starts_with("https://");
  if (!https && !url.starts_with("http://")) {
    return Status::InvalidArgument(fmt::format(
        "master URL \"{}\" must start with http:// or https://, e.g. http://127.0.0.1:7420",
        base_url));
  }
  std::string hostport = url.substr(https ? 8 : 7);
  if (hostport.find('/') != std::string::npos) {
    return Status::InvalidArgument(fmt::format(
        "master URL \"{}\" must not have a path, e.g. http://127.0.0.1:7420", base_url));
  }
  auto impl = std::make_unique<Impl>();
  impl->base_url = url;
  size_t colon = hostport.rfind(':');
  if (colon == std::string::npos) {
    impl->host = hostport;
    impl->port = https ? "443" : "80";
  } else {
    impl->host = hostport.substr(0, colon);
    impl->port = hostport.substr(colon + 1);
  }
  if (impl->host.empty() || impl->port.empty() ||
      impl->port.find_first_not_of("0123456789") != std::string::npos) {
    return Status::InvalidArgument(
        fmt::format("master URL \"{}\" is not http(s)://HOST:PORT", base_url));
  }
  if (https) {
    COHORT_ASSIGN_OR_RETURN(TlsOptions loaded, LoadTls(url, tls));
    impl->tls = loaded.context;
    impl->ca_file = loaded.ca_file;
  }
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(impl)));
}

StatusOr<TlsOptions> LoadTls(std::string_view base_url, TlsOptions tls) {
  if (tls.context || !base_url.starts_with("https://")) return tls;
  COHORT_ASSIGN_OR_RETURN(tls.context, tls::NewClientContext(tls.ca_file));
  return tls;
}

const std::string& HttpClient::base_url() const { return impl_->base_url; }

void HttpClient::Cancel() {
  Impl* d = impl_.get();
  d->cancel_requested = true;
  // The stream belongs to the requesting thread; the cancellation runs there, inside its
  // io_context. Posted while no request runs, it runs at the start of the next one and, the
  // flag being cleared by then, does nothing.
  net::post(d->ioc, [d] {
    if (d->cancel_requested && d->connected()) d->Tcp().cancel();
  });
}

StatusOr<HttpResult> HttpClient::Request(
    std::string_view method, std::string_view target, std::string_view body,
    std::string_view content_type, Duration timeout,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  Impl& d = *impl_;
  d.cancel_requested = false;
  // A kept-alive connection may have been closed by the server meanwhile; then (and only then,
  // before anything of the answer arrived) the request is sent once more on a new connection.
  for (int try_number = 0; try_number < 2; ++try_number) {
    bool reused = d.connected();
    COHORT_RETURN_IF_ERROR(d.Connect(timeout));
    auto req = d.MakeRequest(method, target, body, content_type);
    for (const auto& [name, value] : headers) req.set(name, value);
    d.Tcp().expires_after(timeout);
    beast::error_code ec = d.WithStream([&](auto& stream) {
      return d.Run([&](auto handler) {
        http::async_write(stream, req,
                          [handler](beast::error_code e, size_t) mutable { handler(e); });
      });
    });
    http::response_parser<http::string_body> parser;
    parser.body_limit(256 * 1024 * 1024);
    if (!ec) {
      ec = d.WithStream([&](auto& stream) {
        return d.Run([&](auto handler) {
          http::async_read(stream, d.buffer, parser,
                           [handler](beast::error_code e, size_t) mutable { handler(e); });
        });
      });
    }
    if (ec) {
      bool stale = reused && try_number == 0 && !parser.got_some() && IsStale(ec);
      d.Drop();
      if (stale) continue;
      return d.Failure(ec, target);
    }
    auto res = parser.release();
    HttpResult result;
    result.status = static_cast<int>(res.result_int());
    result.content_type = std::string(res[http::field::content_type]);
    result.body = std::move(res.body());
    if (!res.keep_alive()) d.Drop();
    return result;
  }
  return Status::Unavailable(fmt::format("{}{}: connection closed", d.base_url, target));
}

void HttpClient::SetHeader(std::string name, std::string value) {
  auto& headers = impl_->fixed_headers;
  std::erase_if(headers, [&](const auto& h) { return h.first == name; });
  if (!value.empty()) headers.emplace_back(std::move(name), std::move(value));
}

StatusOr<HttpResult> HttpClient::Stream(std::string_view target,
                                        const std::function<bool(std::string_view)>& on_data) {
  Impl& d = *impl_;
  d.cancel_requested = false;
  d.Drop();  // a stream owns its connection until the end
  COHORT_RETURN_IF_ERROR(d.Connect(std::chrono::seconds(10)));
  auto req = d.MakeRequest("GET", target, {}, {});
  req.keep_alive(false);
  http::response_parser<http::buffer_body> parser;
  // Not boost::none: Beast 1.74 compares a Content-Length against an empty limit as "too big".
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  beast::error_code ec = d.SendAndReadHeader(req, parser);
  if (ec) return d.Failure(ec, target);
  HttpResult result;
  result.status = static_cast<int>(parser.get().result_int());
  result.content_type = std::string(parser.get()[http::field::content_type]);
  bool ok = result.status / 100 == 2;
  char buf[64 * 1024];
  // A followed log may stay quiet for a long time: no deadline while streaming.
  d.Tcp().expires_never();
  while (!parser.is_done()) {
    parser.get().body().data = buf;
    parser.get().body().size = sizeof(buf);
    ec = d.WithStream([&](auto& stream) {
      return d.Run([&](auto handler) {
        http::async_read_some(stream, d.buffer, parser,
                              [handler](beast::error_code e, size_t) mutable { handler(e); });
      });
    });
    if (ec == http::error::need_buffer) ec = {};
    if (ec) return d.Failure(ec, target);
    size_t n = sizeof(buf) - parser.get().body().size;
    if (n == 0) continue;
    if (ok) {
      if (!on_data(std::string_view(buf, n))) break;
    } else {
      result.body.append(buf, n);
    }
  }
  d.Drop();
  return result;
}

namespace {

class Upgraded final : public UpgradedConnection {
 public:
  explicit Upgraded(HttpClient::Impl& d) : d_(d) {}
  ~Upgraded() override { d_.Drop(); }

  StatusOr<std::string> ReadSome(size_t max) override {
    std::string out;
    if (d_.buffer.size() > 0) {
      size_t n = std::min(max, d_.buffer.size());
      out.assign(static_cast<const char*>(d_.buffer.data().data()), n);
      d_.buffer.consume(n);
      return out;
    }
    if (!d_.connected()) return out;
    out.resize(max);
    size_t got = 0;
    beast::error_code ec = d_.WithStream([&](auto& stream) {
      return d_.Run([&](auto handler) {
        stream.async_read_some(net::buffer(out.data(), out.size()),
                               [handler, &got](beast::error_code e, size_t n) mutable {
                                 got = n;
                                 handler(e);
                               });
      });
    });
    out.resize(got);
    if (ec == net::error::eof || ec == net::ssl::error::stream_truncated) return std::string();
    if (ec) return d_.Failure(ec, "");
    return out;
  }

  Status Write(std::string_view data) override {
    if (!d_.connected()) return Status::Unavailable("the connection is closed");
    beast::error_code ec = d_.WithStream([&](auto& stream) {
      return d_.Run([&](auto handler) {
        net::async_write(stream, net::buffer(data.data(), data.size()),
                         [handler](beast::error_code e, size_t) mutable { handler(e); });
      });
    });
    if (ec) return d_.Failure(ec, "");
    return Status::Ok();
  }

  int fd() override { return d_.connected() ? d_.Tcp().socket().native_handle() : -1; }

  bool HasBuffered() override {
    if (d_.buffer.size() > 0) return true;
    return d_.secure && SSL_pending(d_.secure->native_handle()) > 0;
  }

 private:
  HttpClient::Impl& d_;
};

}  // namespace

StatusOr<UpgradeResult> HttpClient::Upgrade(std::string_view target, std::string_view protocol) {
  Impl& d = *impl_;
  d.cancel_requested = false;
  d.Drop();  // the upgraded connection is a new one of its own
  COHORT_RETURN_IF_ERROR(d.Connect(std::chrono::seconds(10)));
  auto req = d.MakeRequest("GET", target, {}, {});
  req.set(http::field::connection, "Upgrade");
  req.set(http::field::upgrade, beast::string_view(protocol.data(), protocol.size()));
  http::response_parser<http::string_body> parser;
  parser.body_limit(1024 * 1024);
  beast::error_code ec = d.SendAndReadHeader(req, parser);
  if (ec) return d.Failure(ec, target);
  UpgradeResult result;
  result.answer.status = static_cast<int>(parser.get().result_int());
  result.answer.content_type = std::string(parser.get()[http::field::content_type]);
  if (result.answer.status == 101) {
    d.Tcp().expires_never();
    result.connection = std::make_unique<Upgraded>(d);
    return result;
  }
  ec = d.WithStream([&](auto& stream) {
    return d.Run([&](auto handler) {
      http::async_read(stream, d.buffer, parser,
                       [handler](beast::error_code e, size_t) mutable { handler(e); });
    });
  });
  if (ec) return d.Failure(ec, target);
  result.answer.body = std::move(parser.get().body());
  d.Drop();
  return result;
}

}  // namespace cohort::client
