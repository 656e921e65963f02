#include "api/http_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <charconv>
#include <deque>

#include "common/strings.h"

namespace cohort::api {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

constexpr auto kIdleTimeout = std::chrono::seconds(75);
constexpr uint64_t kBodyLimit = 16 * 1024 * 1024;

class Session : public Responder, public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Handler handler)
      : stream_(std::move(socket)), handler_(std::move(handler)) {}

  void Start() { DoRead(); }

  void Send(HttpResponse response) override {
    if (responded_ || closed_) return;
    responded_ = true;
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(response.status), version_);
    res->set(http::field::server, "cohort");
    res->set(http::field::content_type, response.content_type);
    for (const auto& [name, value] : response.headers) res->set(name, value);
    res->keep_alive(keep_alive_);
    res->body() = std::move(response.body);
    res->prepare_payload();
    stream_.expires_after(kIdleTimeout);
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res](beast::error_code ec, size_t) {
                        self->OnWritten(ec, res->need_eof());
                      });
  }

  void StartStream(int status, std::string content_type) override {
    if (responded_ || closed_) return;
    responded_ = true;
    streaming_ = true;
    header_ = std::make_shared<http::response<http::empty_body>>(static_cast<http::status>(status),
                                                                 version_);
    header_->set(http::field::server, "cohort");
    header_->set(http::field::content_type, content_type);
    header_->set(http::field::cache_control, "no-cache");
    header_->keep_alive(false);  // the stream ends the connection
    header_->chunked(true);
    serializer_ = std::make_shared<http::response_serializer<http::empty_body>>(*header_);
    writing_ = true;
    stream_.expires_never();
    http::async_write_header(stream_, *serializer_,
                             [self = shared_from_this()](beast::error_code ec, size_t) {
                               self->writing_ = false;
                               if (ec) return self->Close();
                               self->WatchForClose();
                               self->WriteNext();
                             });
  }

  void WriteChunk(std::string data, std::function<void(bool)> done) override {
    if (closed_) {
      if (done) done(false);
      return;
    }
    chunks_.push_back(
        Chunk{std::make_shared<std::string>(std::move(data)), std::move(done), false});
    if (!writing_) WriteNext();
  }

  void EndStream() override {
    if (closed_) return;
    chunks_.push_back(Chunk{nullptr, nullptr, true});
    if (!writing_) WriteNext();
  }

  bool closed() const override { return closed_; }

  void OnClose(std::function<void()> callback) override {
    if (closed_) return callback();
    on_close_.push_back(std::move(callback));
  }

 private:
  struct Chunk {
    std::shared_ptr<std::string> data;
    std::function<void(bool)> done;
    bool last;
  };

  void DoRead() {
    parser_.emplace();
    parser_->body_limit(kBodyLimit);
    stream_.expires_after(kIdleTimeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::connection_reset || ec == net::error::eof) {
      return Close();
    }
    if (ec) {
      if (ec == http::error::body_limit) {
        keep_alive_ = false;
        version_ = 11;
        return Send(HttpResponse{
            413, "application/json",
            R"({"error":{"code":"invalid_argument","message":"request body is larger than 16 MiB"}})"});
      }
      spdlog::debug("http read: {}", ec.message());
      return Close();
    }
    auto& req = parser_->get();
    version_ = req.version();
    keep_alive_ = req.keep_alive();
    responded_ = false;
    HttpRequest request;
    request.method = std::string(req.method_string());
    std::string_view target(req.target().data(), req.target().size());
    size_t q = target.find('?');
    request.path = PercentDecode(target.substr(0, q), false);
    if (q != std::string_view::npos) request.query = ParseQuery(target.substr(q + 1));
    for (const auto& field : req) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(), ::tolower);
      request.headers[name] = std::string(field.value());
    }
    request.body = std::move(req.body());
    beast::error_code remote_ec;
    auto ep = stream_.socket().remote_endpoint(remote_ec);
    if (!remote_ec) request.remote = fmt::format("{}:{}", ep.address().to_string(), ep.port());
    // The handler may answer much later (long polls, log streams): no read timeout meanwhile.
    stream_.expires_never();
    try {
      handler_(std::move(request), shared_from_this());
    } catch (const std::exception& e) {
      spdlog::error("handler threw: {}", e.what());
      Send(HttpResponse{500, "application/json",
                        R"({"error":{"code":"internal","message":"internal error"}})"});
    }
  }

  // A streaming client sends nothing more, so a read completes only when it goes away (or
  // with bytes it should not have sent, which are dropped). Reading and writing at once is
  // allowed on a tcp_stream.
  void WatchForClose() {
    stream_.async_read_some(net::buffer(probe_),
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (ec) return self->Close();
                              self->WatchForClose();
                            });
  }

  void OnWritten(beast::error_code ec, bool close) {
    if (ec || close) return Close();
    DoRead();
  }

  void WriteNext() {
    if (chunks_.empty() || writing_ || closed_ || !serializer_) return;
    writing_ = true;
    Chunk chunk = std::move(chunks_.front());
    chunks_.pop_front();
    auto self = shared_from_this();
    if (chunk.last) {
      net::async_write(stream_, http::make_chunk_last(), [self](beast::error_code, size_t) {
        self->writing_ = false;
        self->Close();
      });
      return;
    }
    net::async_write(stream_, http::make_chunk(net::buffer(*chunk.data)),
                     [self, chunk](beast::error_code ec, size_t) {
                       self->writing_ = false;
                       if (chunk.done) chunk.done(!ec);
                       if (ec) return self->Close();
                       self->WriteNext();
                     });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
    for (auto& c : chunks_) {
      if (c.done) c.done(false);
    }
    chunks_.clear();
    auto callbacks = std::move(on_close_);
    for (auto& callback : callbacks) callback();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  Handler handler_;
  std::optional<http::request_parser<http::string_body>> parser_;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool responded_ = false;
  bool closed_ = false;
  bool streaming_ = false;
  bool writing_ = false;
  std::shared_ptr<http::response<http::empty_body>> header_;
  std::shared_ptr<http::response_serializer<http::empty_body>> serializer_;
  std::deque<Chunk> chunks_;
  std::vector<std::function<void()>> on_close_;
  char probe_[512];
};

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(net::io_context& ioc, Handler handler)
      : ioc(ioc), acceptor(ioc), handler(std::move(handler)) {}

  void Accept() {
    acceptor.async_accept([self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
      if (!self->acceptor.is_open()) return;
      if (!ec) {
        socket.set_option(tcp::no_delay(true), ec);
        std::make_shared<Session>(std::move(socket), self->handler)->Start();
      }
      self->Accept();
    });
  }

  net::io_context& ioc;
  tcp::acceptor acceptor;
  Handler handler;
};

HttpServer::HttpServer(net::io_context& ioc, Handler handler)
    : impl_(std::make_shared<Impl>(ioc, std::move(handler))) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Listen(const std::string& host, int port) {
  beast::error_code ec;
  auto address = net::ip::make_address(host, ec);
  if (ec)
    return Status::InvalidArgument(fmt::format("--listen: \"{}\" is not an IP address", host));
  tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::Unavailable(fmt::format("cannot listen on {}:{}: {}", host, port, ec.message()));
  }
  impl_->Accept();
  return Status::Ok();
}

int HttpServer::port() const {
  beast::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

void HttpServer::Stop() {
  beast::error_code ec;
  impl_->acceptor.close(ec);
}

std::string PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() &&
        std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      unsigned byte = 0;  // two hex digits, checked above: from_chars cannot fail
      std::from_chars(text.data() + i + 1, text.data() + i + 3, byte, 16);
      out += static_cast<char>(byte);
      i += 2;
    } else if (text[i] == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += text[i];
    }
  }
  return out;
}

std::map<std::string, std::string> ParseQuery(std::string_view query) {
  std::map<std::string, std::string> out;
  for (const auto& part : Split(query, '&')) {
    if (part.empty()) continue;
    size_t eq = part.find('=');
    if (eq == std::string::npos) {
      out[PercentDecode(part, true)] = "";
    } else {
      out[PercentDecode(std::string_view(part).substr(0, eq), true)] =
          PercentDecode(std::string_view(part).substr(eq + 1), true);
    }
  }
  return out;
}

}  // namespace cohort::api
