#include "api/http_proxy.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <boost/algorithm/string/predicate.hpp>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "api/keep_alive.h"
#include "common/units.h"

namespace cohort::api {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

constexpr size_t kChunk = 16 * 1024;
// A relayed answer's chunk, and the most read from the backend at once: each costs a round of
// reads and writes, and a client's decoding.
constexpr size_t kStreamChunk = 256 * 1024;
// The most read at once of an answer read whole.
constexpr size_t kWholeReadSize = 64 * 1024;

std::string ErrorJson(std::string_view code, std::string_view message) {
  return nlohmann::json{{"error", {{"code", code}, {"message", message}}}}.dump();
}

class ProxyCall final : public ProxiedCall, public std::enable_shared_from_this<ProxyCall> {
 public:
  ProxyCall(net::io_context& ioc, const HttpRequest& request, std::shared_ptr<Responder> responder,
            ProxyTarget target, ProxyLimits limits,
            std::function<void(std::string_view)> on_client_bytes)
      : resolver_(ioc),
        stream_(ioc),
        responder_(std::move(responder)),
        target_(std::move(target)),
        limits_(limits),
        on_client_bytes_(std::move(on_client_bytes)) {
    BuildRequest(request);
  }

  void Start() {
    resolver_.async_resolve(
        target_.host, std::to_string(target_.port),
        [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type results) {
          if (ec) return self->Fail(502, "cannot reach", ec.message());
          self->stream_.expires_after(self->limits_.connect_timeout);
          self->stream_.async_connect(results, [self](beast::error_code ec, const tcp::endpoint&) {
            if (ec) return self->Fail(502, "cannot reach", ec.message());
            KeepAlive(self->stream_.socket());
            self->Forward();
          });
        });
  }

 private:
  void BuildRequest(const HttpRequest& in) {
    request_.method_string(in.method);
    request_.target(target_.path);
    request_.version(11);
    for (const auto& [name, value] : in.headers) {
      if (IsHopByHopHeader(name) || name == "host" || name == "authorization" ||
          name == "content-length") {
        continue;
      }
      request_.insert(name, value);
    }
    request_.set(http::field::host, fmt::format("{}:{}", target_.host, target_.port));
    for (const auto& [name, value] : target_.add_headers) request_.set(name, value);
    if (auto it = in.headers.find("upgrade"); it != in.headers.end()) {
      auto connection = in.headers.find("connection");
      if (connection != in.headers.end() && boost::icontains(connection->second, "upgrade")) {
        upgrade_ = it->second;
        request_.set(http::field::connection, "Upgrade");
        request_.set(http::field::upgrade, upgrade_);
      }
    }
    request_.body() = in.body;
    if (!in.body.empty() || in.method == "POST" || in.method == "PUT" || in.method == "PATCH") {
      request_.prepare_payload();
    }
  }

  void Forward() {
    stream_.expires_after(limits_.answer_timeout);
    http::async_write(stream_, request_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->Fail(502, "lost", ec.message());
      // No bound while the header is read: a large answer is streamed (ReadWhole bounds the rest).
      // The largest number, not boost::none, which Boost 1.74's parser compares as below any
      // length (every answer with a Content-Length would be "too large").
      self->head_parser_.body_limit(std::numeric_limits<std::uint64_t>::max());
      http::async_read_header(self->stream_, self->buffer_, self->head_parser_,
                              [self](beast::error_code ec, size_t) {
                                if (ec) return self->ReadFailed(ec);
                                self->head_ = self->head_parser_.get().base();
                                if (!self->upgrade_.empty() && self->head_.result_int() == 101) {
                                  return self->Switch();
                                }
                                if (self->AnswerWhole()) return self->ReadWhole();
                                self->Stream();
                              });
    });
  }

  // Whether the answer is read whole and sent as one (kept-alive) response: one with no body or
  // a known length within the bound, or of a type the caller rewrites (ProxyLimits::whole_types,
  // bounded all the same). Any other is relayed as it arrives.
  bool AnswerWhole() const {
    if (head_parser_.is_done()) return true;
    auto length = head_parser_.content_length();
    if (length && *length <= limits_.max_response_bytes) return true;
    const std::string type(head_[http::field::content_type]);
    return std::any_of(limits_.whole_types.begin(), limits_.whole_types.end(),
                       [&](const std::string& t) { return boost::istarts_with(type, t); });
  }

  void ReadWhole() {
    if (auto length = head_parser_.content_length();
        length && *length > limits_.max_response_bytes) {
      return Fail(502, "answered too much", TooMuch());
    }
    whole_parser_.emplace(std::move(head_parser_));
    whole_parser_->body_limit(limits_.max_response_bytes);
    buffer_.reserve(kWholeReadSize);  // reads of this size, not of the room a header left
    if (whole_parser_->is_done()) return Answer();
    http::async_read(stream_, buffer_, *whole_parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return self->ReadFailed(ec);
                       self->Answer();
                     });
  }

  // A large answer (a file downloaded) goes on as chunks as they come, one at a time: the
  // master holds one chunk of it, however large it is.
  void Stream() {
    responder_->StartStream(static_cast<int>(head_.result_int()),
                            std::string(head_[http::field::content_type]), AnswerHeaders(false));
    streamed_parser_.emplace(std::move(head_parser_));
    // Beast reads as much as the buffer has room for (at least 512 bytes): the few hundred bytes
    // a header left room for made a download through the master 100,000 reads of 600 bytes.
    buffer_.reserve(kStreamChunk);
    streamed_parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    ReadChunk();
  }

  void ReadChunk() {
    auto& parser = *streamed_parser_;
    if (parser.is_done()) {
      responder_->EndStream();
      return Close();
    }
    stream_buffer_.resize(kStreamChunk);
    parser.get().body().data = stream_buffer_.data();
    parser.get().body().size = stream_buffer_.size();
    stream_.expires_after(limits_.answer_timeout);
    http::async_read_some(
        stream_, buffer_, parser, [self = shared_from_this()](beast::error_code ec, size_t) {
          if (ec == http::error::need_buffer) ec = {};
          if (ec) {
            // Cut short: so is the client's answer, which must not look complete.
            spdlog::info("proxy: {} ({}:{}) broke off an answer: {}", self->target_.name,
                         self->target_.host, self->target_.port, ec.message());
            self->responder_->AbortStream();
            return self->Close();
          }
          const size_t got =
              self->stream_buffer_.size() - self->streamed_parser_->get().body().size;
          if (got == 0) return self->ReadChunk();
          self->responder_->WriteChunk(std::string(self->stream_buffer_.data(), got),
                                       [self](bool ok) {
                                         if (!ok) return self->Close();
                                         self->ReadChunk();
                                       });
        });
  }

  std::string TooMuch() const {
    return fmt::format("more than {} bytes, the proxy's limit", limits_.max_response_bytes);
  }

  void ReadFailed(const beast::error_code& ec) {
    if (ec == beast::error::timeout) {
      return Fail(504, "did not answer",
                  fmt::format("within {}", FormatDuration(limits_.answer_timeout)));
    }
    if (ec == http::error::body_limit) return Fail(502, "answered too much", TooMuch());
    Fail(502, "lost", ec.message());
  }

  std::vector<std::pair<std::string, std::string>> AnswerHeaders(bool keep_length) const {
    std::vector<std::pair<std::string, std::string>> headers;
    for (const auto& field : head_) {
      std::string name(field.name_string());
      std::string lower = name;
      std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
      if (IsHopByHopHeader(lower) || lower == "content-type" || lower == "server" ||
          (!keep_length && lower == "content-length")) {
        continue;
      }
      headers.emplace_back(name, std::string(field.value()));
    }
    return headers;
  }

  void Answer() {
    HttpResponse answer;
    answer.status = static_cast<int>(head_.result_int());
    answer.content_type = std::string(head_[http::field::content_type]);
    answer.body = std::move(whole_parser_->get().body());
    answer.headers = AnswerHeaders(false);
    Close();
    responder_->Send(std::move(answer));
  }

  // The backend switched protocols: so does the client's connection, and the bytes flow.
  void Switch() {
    stream_.expires_never();
    auto self = shared_from_this();
    responder_->Upgrade(upgrade_, AnswerHeaders(true), [self](std::shared_ptr<ByteChannel> client) {
      self->client_ = std::move(client);
      // What the backend sent behind its 101 header.
      if (self->buffer_.size() > 0) {
        std::string early = beast::buffers_to_string(self->buffer_.data());
        self->buffer_.consume(self->buffer_.size());
        self->client_->Write(std::move(early), nullptr);
      }
      self->FromClient();
      self->FromBackend();
    });
  }

  void FromClient() {
    client_->Read([self = shared_from_this()](std::string_view data) {
      if (data.empty()) return self->Close();
      if (self->on_client_bytes_) self->on_client_bytes_(data);
      auto chunk = std::make_shared<std::string>(data);
      net::async_write(self->stream_, net::buffer(*chunk),
                       [self, chunk](beast::error_code ec, size_t) {
                         if (ec) return self->Close();
                         self->FromClient();
                       });
    });
  }

  void FromBackend() {
    stream_.async_read_some(
        net::buffer(read_buffer_), [self = shared_from_this()](beast::error_code ec, size_t n) {
          if (ec) return self->Close();
          self->client_->Write(std::string(self->read_buffer_.data(), n), [self](bool ok) {
            if (!ok) return self->Close();
            self->FromBackend();
          });
        });
  }

  void Fail(int status, std::string_view what, const std::string& detail) {
    Close();
    std::string message =
        fmt::format("{} ({}:{}) {}: {}", target_.name, target_.host, target_.port, what, detail);
    spdlog::info("proxy: {}", message);
    responder_->Send(
        HttpResponse{status, "application/json",
                     ErrorJson(status == 504 ? "deadline_exceeded" : "unavailable", message)});
  }

 public:
  void Close() override {
    if (closed_) return;
    closed_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    if (client_) client_->Close();
  }

  bool closed() const override { return closed_; }

 private:
  tcp::resolver resolver_;
  beast::tcp_stream stream_;
  std::shared_ptr<Responder> responder_;
  ProxyTarget target_;
  ProxyLimits limits_;
  std::function<void(std::string_view)> on_client_bytes_;
  http::request<http::string_body> request_;
  std::string upgrade_;  // the protocol asked for; empty: a plain request
  beast::flat_buffer buffer_;
  // The answer's header is read first; then its body whole or as it comes.
  http::response_parser<http::empty_body> head_parser_;
  http::response_header<> head_;
  std::optional<http::response_parser<http::string_body>> whole_parser_;
  std::optional<http::response_parser<http::buffer_body>> streamed_parser_;
  std::shared_ptr<ByteChannel> client_;
  std::array<char, kChunk> read_buffer_;
  std::vector<char> stream_buffer_;  // a relayed answer's chunk (kStreamChunk)
  bool closed_ = false;
};

}  // namespace

bool IsHopByHopHeader(std::string_view name) {
  return name == "connection" || name == "keep-alive" || name == "proxy-connection" ||
         name == "proxy-authenticate" || name == "proxy-authorization" || name == "te" ||
         name == "trailer" || name == "transfer-encoding" || name == "upgrade";
}

std::shared_ptr<ProxiedCall> Proxy(net::io_context& ioc, const HttpRequest& request,
                                   std::shared_ptr<Responder> responder, ProxyTarget target,
                                   ProxyLimits limits,
                                   std::function<void(std::string_view)> on_client_bytes) {
  auto call = std::make_shared<ProxyCall>(ioc, request, std::move(responder), std::move(target),
                                          limits, std::move(on_client_bytes));
  call->Start();
  return call;
}

}  // namespace cohort::api
