#include "api/http_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <charconv>
#include <deque>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>

#include "api/connection_slots.h"
#include "api/memory_trim.h"
#include "common/strings.h"
#include "common/units.h"

namespace cohort::api {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;
using SteadyTime = std::chrono::steady_clock::time_point;

// A client that was refused (413, 414, 431, 503...) may still be sending; its data is read and
// dropped for this long before the connection is closed, so that closing with unread data does
// not reset the connection before the client has read why. A refused TLS client has as long to
// finish its handshake.
constexpr auto kLingerTimeout = std::chrono::seconds(1);
// Every TLS connection starts with a handshake record (content type 22).
constexpr unsigned char kTlsHandshakeRecord = 0x16;
constexpr size_t kReadChunk = 16 * 1024;
constexpr auto kTrimInterval = std::chrono::milliseconds(1000);
constexpr auto kRoomReportInterval = std::chrono::seconds(10);

std::string ErrorBody(std::string_view code, std::string_view message) {
  return nlohmann::json{{"error", {{"code", code}, {"message", message}}}}.dump();
}

std::string Bytes(uint64_t n) {
  if (n >= 1024 && n % 1024 == 0) {
    return n % (1024 * 1024) == 0 ? fmt::format("{} MiB", n / (1024 * 1024))
                                  : fmt::format("{} KiB", n / 1024);
  }
  return fmt::format("{} bytes", n);
}

// What every connection of one server shares.
struct ServerShared {
  ServerShared(net::io_context& ioc, Handler handler, BodyLimit body_limit, HttpLimits limits)
      : handler(std::move(handler)),
        body_limit(std::move(body_limit)),
        limits(limits),
        slots(ConnectionSlots::Limits{limits.max_connections, limits.max_connections_per_address}),
        trimmer(std::make_shared<MemoryTrimmer>(ioc, kTrimInterval)) {}

  Handler handler;
  BodyLimit body_limit;
  HttpLimits limits;
  ConnectionSlots slots;  // the places of the sessions whose socket is open
  std::shared_ptr<MemoryTrimmer> trimmer;
  std::shared_ptr<net::ssl::context> tls;  // null: plain HTTP
};

// One connection, over plain TCP (PlainStream) or TLS (TlsStream).
template <typename Stream>
class Session : public Responder,
                public ByteChannel,
                public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

 public:
  Session(tcp::socket socket, std::shared_ptr<ServerShared> shared)
      : stream_(NewStream(std::move(socket), *shared)),
        deadline_(stream_.get_executor()),
        shared_(std::move(shared)),
        first_header_by_(std::chrono::steady_clock::now() + limits().header_timeout) {}
  ~Session() override { Release(); }

  // Holding `slot`, one of the server's places until it closes. A new client has the header
  // timeout for its TLS handshake and its first request header together.
  void Start(std::unique_ptr<ConnectionSlots::Slot> slot) {
    slot_ = std::move(slot);
    Handshake(limits().header_timeout, [](Session& self) { self.ReadRequest(); });
  }

  // Its place was given to a new connection (ConnectionSlots): it was doing nothing for anyone.
  void CloseToMakeRoom() {
    spdlog::debug("closing the connection of {} to make room for a new one", Remote());
    Close();
  }

  // Over the connection cap: the answer, once there is a channel to send it on.
  void StartRefused(int status, std::string_view code, std::string message,
                    std::vector<std::pair<std::string, std::string>> headers) {
    Handshake(kLingerTimeout, [status, code, message = std::move(message),
                               headers = std::move(headers)](Session& self) mutable {
      self.Refuse(status, code, message, std::move(headers));
    });
  }

  // Answers `status` with a JSON error and closes, whatever the client sends meanwhile.
  void Refuse(int status, std::string_view code, const std::string& message,
              std::vector<std::pair<std::string, std::string>> headers = {}) {
    Enter(ConnectionPhase::kServing);
    keep_alive_ = false;
    drain_before_close_ = true;
    responded_ = false;
    Send(HttpResponse{status, "application/json", ErrorBody(code, message), std::move(headers)});
  }

  void Send(HttpResponse response) override {
    if (responded_ || closed_) return;
    responded_ = true;
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(response.status), version_);
    res->set(http::field::server, "cohort");
    res->set(http::field::content_type, response.content_type);
    for (const auto& [name, value] : response.headers) res->insert(name, value);
    res->keep_alive(keep_alive_);
    res->body() = std::move(response.body);
    res->prepare_payload();
    Tcp().expires_after(shared_->limits.idle_timeout);
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res](beast::error_code ec, size_t) {
                        self->OnWritten(ec, res->need_eof());
                      });
  }

  void StartStream(int status, std::string content_type,
                   std::vector<std::pair<std::string, std::string>> headers = {}) override {
    if (responded_ || closed_) return;
    responded_ = true;
    streaming_ = true;
    header_ = std::make_shared<http::response<http::empty_body>>(static_cast<http::status>(status),
                                                                 version_);
    header_->set(http::field::server, "cohort");
    header_->set(http::field::content_type, content_type);
    for (const auto& [name, value] : headers) header_->insert(name, value);
    if (header_->find(http::field::cache_control) == header_->end()) {
      header_->set(http::field::cache_control, "no-cache");
    }
    header_->keep_alive(false);  // the stream ends the connection
    header_->chunked(true);
    serializer_ = std::make_shared<http::response_serializer<http::empty_body>>(*header_);
    writing_ = true;
    Tcp().expires_never();
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

  void AbortStream() override {
    if (closed_) return;
    chunks_.push_back(Chunk{nullptr, nullptr, true, true});
    if (!writing_) WriteNext();
  }

  bool closed() const override { return closed_; }

  void MarkAuthenticated() override {
    if (slot_) slot_->MarkAuthenticated();
  }

  void OnClose(std::function<void()> callback) override {
    if (closed_) return callback();
    on_close_.push_back(std::move(callback));
  }

  void Upgrade(std::string protocol, std::vector<std::pair<std::string, std::string>> headers,
               std::function<void(std::shared_ptr<ByteChannel>)> then) override {
    if (responded_ || closed_) return;
    responded_ = true;
    auto res = std::make_shared<http::response<http::empty_body>>(http::status::switching_protocols,
                                                                  version_);
    res->set(http::field::server, "cohort");
    res->set(http::field::connection, "Upgrade");
    res->set(http::field::upgrade, protocol);
    for (const auto& [name, value] : headers) res->insert(name, value);
    Tcp().expires_after(shared_->limits.idle_timeout);  // the answer's write only
    http::async_write(
        stream_, *res,
        [self = shared_from_this(), res, then = std::move(then)](beast::error_code ec, size_t) {
          if (ec) return self->Close();
          self->Tcp().expires_never();
          self->raw_read_ = std::make_unique<char[]>(kReadChunk);
          then(self);
        });
  }

  // ByteChannel, once upgraded.
  void Read(std::function<void(std::string_view)> done) override {
    if (closed_ || !raw_read_) return done({});
    if (buffer_.size() > 0) {
      // What the client sent right behind its request, read with it.
      std::string early(static_cast<const char*>(buffer_.data().data()), buffer_.size());
      buffer_.consume(buffer_.size());
      return done(early);
    }
    stream_.async_read_some(
        net::buffer(raw_read_.get(), kReadChunk),
        [self = shared_from_this(), done = std::move(done)](beast::error_code ec, size_t n) {
          if (ec || n == 0) {
            self->Close();
            return done({});
          }
          done(std::string_view(self->raw_read_.get(), n));
        });
  }

  void Write(std::string data, std::function<void(bool)> done) override {
    if (closed_) {
      if (done) done(false);
      return;
    }
    raw_writes_.push_back(
        Chunk{std::make_shared<std::string>(std::move(data)), std::move(done), false});
    if (!writing_) WriteRawNext();
  }

  void Close() override {
    if (closed_) return;
    closed_ = true;
    deadline_.cancel();
    // No TLS close_notify: every response is delimited by its length or its last chunk, and
    // waiting for the peer's close_notify could hold the connection.
    beast::error_code ec;
    Tcp().socket().shutdown(tcp::socket::shutdown_both, ec);
    Tcp().close();
    Release();
    for (auto* queue : {&chunks_, &raw_writes_}) {
      for (auto& c : *queue) {
        if (c.done) c.done(false);
      }
      queue->clear();
    }
    auto callbacks = std::move(on_close_);
    for (auto& callback : callbacks) callback();
  }

 private:
  struct Chunk {
    std::shared_ptr<std::string> data;
    std::function<void(bool)> done;
    bool last;
    bool aborted = false;  // the stream's end without its last chunk (AbortStream)
  };

  using std::enable_shared_from_this<Session<Stream>>::shared_from_this;

  static Stream NewStream(tcp::socket socket, ServerShared& shared) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *shared.tls);
    } else {
      return Stream(std::move(socket));
    }
  }

  // The TCP layer: timeouts, cancellation, shutdown, and raw bytes where TLS has no part.
  beast::tcp_stream& Tcp() { return beast::get_lowest_layer(stream_); }

  const HttpLimits& limits() const { return shared_->limits; }

  // Runs `then` once a TLS handshake has succeeded within `timeout` (at once without TLS). A
  // client that speaks plain HTTP to the TLS port is told so in plain HTTP; any other failure
  // closes the connection.
  template <typename Then>
  void Handshake(Duration timeout, Then then) {
    if constexpr (!kTls) {
      then(*this);
    } else {
      const SteadyTime deadline = std::chrono::steady_clock::now() + timeout;
      StartDeadline(deadline);
      Tcp().socket().async_wait(tcp::socket::wait_read, [self = shared_from_this(), deadline,
                                                         then = std::move(then)](
                                                            beast::error_code ec) mutable {
        if (self->EndDeadline(ec) || ec) return self->HandshakeFailed(ec);
        if (self->SpeaksPlainHttp()) return self->RefusePlainHttp();
        self->StartDeadline(deadline);
        self->stream_.async_handshake(net::ssl::stream_base::server,
                                      [self, then = std::move(then)](beast::error_code ec) mutable {
                                        if (self->EndDeadline(ec) || ec)
                                          return self->HandshakeFailed(ec);
                                        then(*self);
                                      });
      });
    }
  }

  // Looks at the first byte the client sent without taking it: an HTTP request starts with a
  // method in capitals, a TLS connection with a handshake record.
  bool SpeaksPlainHttp() {
    unsigned char first = 0;
    ssize_t n = ::recv(Tcp().socket().native_handle(), &first, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 1 && first != kTlsHandshakeRecord && std::isupper(first);
  }

  void HandshakeFailed(const beast::error_code& ec) {
    if (timed_out_) {
      spdlog::debug("TLS handshake from {}: no handshake within the time allowed", Remote());
    } else {
      spdlog::debug("TLS handshake from {}: {}", Remote(), ec.message());
    }
    Close();
  }

  // Answered without TLS, since the client speaks none, and closed.
  void RefusePlainHttp() {
    auto res = std::make_shared<http::response<http::string_body>>(http::status::bad_request, 11);
    res->set(http::field::server, "cohort");
    res->set(http::field::content_type, "application/json");
    res->keep_alive(false);
    res->body() = ErrorBody("invalid_argument",
                            "this port serves HTTPS, not plain HTTP: use an https:// master URL");
    res->prepare_payload();
    responded_ = true;
    Tcp().expires_after(kLingerTimeout);
    http::async_write(Tcp(), *res, [self = shared_from_this(), res](beast::error_code ec, size_t) {
      if (ec) return self->Close();
      self->DrainAndClose();
    });
  }

  // "[::1]:40000" for IPv6, so that the port cannot be read as part of the address.
  std::string Remote() {
    beast::error_code ec;
    auto ep = Tcp().socket().remote_endpoint(ec);
    if (ec) return "?";
    std::string address = ep.address().to_string();
    if (ep.address().is_v6()) address = "[" + address + "]";
    return fmt::format("{}:{}", address, ep.port());
  }

  void ReadRequest() {
    parser_.emplace();
    parser_->header_limit(limits().max_header_bytes);
    // The route's limit is applied once the header is in. (Not boost::none: Beast 1.74 compares
    // an announced length against it as against the smallest limit.)
    parser_->body_limit(std::numeric_limits<uint64_t>::max());
    // A new connection has until first_header_by_ for its whole first header: a client that
    // connects and sends nothing holds its place for seconds, not for the idle timeout.
    if (requests_ == 0) return ReadHeader(first_header_by_);
    // The client sent its next request already.
    if (buffer_.size() > 0)
      return ReadHeader(std::chrono::steady_clock::now() + limits().header_timeout);
    // An idle kept-alive connection may wait long for its next request (unless its place is
    // wanted); the header clock starts with the request's first byte.
    Enter(ConnectionPhase::kIdle);
    Tcp().expires_after(limits().idle_timeout);
    stream_.async_read_some(
        buffer_.prepare(kReadChunk), [self = shared_from_this()](beast::error_code ec, size_t n) {
          if (ec) return self->Close();  // idle too long, or gone
          self->buffer_.commit(n);
          self->ReadHeader(std::chrono::steady_clock::now() + self->limits().header_timeout);
        });
  }

  void Enter(ConnectionPhase phase) {
    if (slot_) slot_->Enter(phase);
  }

  // The stream's own timeout would close the socket, leaving no way to say why: a read that
  // takes too long is cancelled by this timer instead, and answered 408.
  void StartDeadline(Duration timeout) {
    StartDeadline(std::chrono::steady_clock::now() + timeout);
  }
  void StartDeadline(SteadyTime at) {
    Tcp().expires_never();
    timed_out_ = false;
    deadline_.expires_at(at);
    deadline_.async_wait([self = shared_from_this()](const beast::error_code& ec) {
      if (ec || self->closed_) return;  // the read finished first
      self->timed_out_ = true;
      beast::error_code ignored;
      self->Tcp().socket().cancel(ignored);
    });
  }

  // Whether the read that ended with `ec` was cut off by the deadline.
  bool EndDeadline(const beast::error_code& ec) {
    deadline_.cancel();
    return ec == net::error::operation_aborted && timed_out_;
  }

  void ReadHeader(SteadyTime deadline) {
    Enter(ConnectionPhase::kHeader);
    StartDeadline(deadline);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (EndDeadline(ec)) {
      // Nothing was asked, so there is nothing to answer.
      if (!parser_->got_some() && buffer_.size() == 0) {
        spdlog::debug("{} sent no request within {}", Remote(),
                      FormatDuration(limits().header_timeout));
        return Close();
      }
      return Refuse(408, "invalid_argument",
                    fmt::format("the request header did not arrive within {}",
                                FormatDuration(limits().header_timeout)));
    }
    if (ec == http::error::header_limit) return RefuseLongHeader();
    if (ec) return OnReadError(ec);
    auto& req = parser_->get();
    version_ = req.version();
    keep_alive_ = req.keep_alive();
    std::string_view target(req.target().data(), req.target().size());
    if (target.size() > limits().max_target_bytes) return RefuseLongTarget();
    request_ = HttpRequest{};
    request_.method = std::string(req.method_string());
    request_.target = std::string(target);
    size_t q = target.find('?');
    request_.path = PercentDecode(target.substr(0, q), false);
    if (q != std::string_view::npos) request_.query = ParseQuery(target.substr(q + 1));
    for (const auto& field : req) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(), ::tolower);
      request_.headers[name] = std::string(field.value());
    }
    request_.remote = Remote();

    body_limit_ = shared_->body_limit(request_.method, request_.path);
    if (auto length = parser_->content_length(); length && *length > body_limit_) {
      return RefuseLargeBody(*length);
    }
    parser_->body_limit(body_limit_);  // for a chunked body, whose size is not announced
    if (parser_->is_done()) return OnRequest();
    Enter(ConnectionPhase::kBody);
    StartDeadline(limits().body_timeout);
    http::async_read(
        stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
          if (self->EndDeadline(ec)) {
            return self->Refuse(408, "invalid_argument",
                                fmt::format("the request body did not arrive within {}",
                                            FormatDuration(self->limits().body_timeout)));
          }
          if (ec == http::error::body_limit) return self->RefuseLargeBody({});
          if (ec) return self->OnReadError(ec);
          self->OnRequest();
        });
  }

  void OnReadError(beast::error_code ec) {
    // A request Beast could not parse is answered; a client that went away is not.
    if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message) {
      return Refuse(400, "invalid_argument", "malformed HTTP request: " + ec.message());
    }
    spdlog::debug("http read: {}", ec.message());
    Close();
  }

  // 414 when the request line alone is too long, else 431: the header fields are.
  void RefuseLongHeader() {
    // A request line the parser has taken is no longer in the buffer (one huge field follows it).
    if (parser_->get().target().empty()) {
      auto data = buffer_.data();
      std::string_view seen(static_cast<const char*>(data.data()), data.size());
      size_t line_end = seen.find("\r\n");
      if (line_end == std::string_view::npos || line_end > limits().max_target_bytes) {
        return RefuseLongTarget();
      }
    }
    Refuse(431, "invalid_argument",
           fmt::format("the request header is larger than {}, the limit",
                       Bytes(limits().max_header_bytes)));
  }

  void RefuseLongTarget() {
    Refuse(414, "invalid_argument",
           fmt::format("the URL is longer than {}, the limit", Bytes(limits().max_target_bytes)));
  }

  void RefuseLargeBody(std::optional<uint64_t> length) {
    std::string size = length ? fmt::format("{} bytes", *length) : "larger than that";
    Refuse(413, "invalid_argument",
           fmt::format("the request body is {}; {} {} takes at most {}", size, request_.method,
                       request_.path, Bytes(body_limit_)));
  }

  void OnRequest() {
    request_.body = std::move(parser_->get().body());
    const size_t body_size = request_.body.size();
    responded_ = false;
    ++requests_;
    Enter(ConnectionPhase::kServing);
    // The handler may answer much later (long polls, log streams): no read timeout meanwhile.
    Tcp().expires_never();
    try {
      shared_->handler(std::move(request_), shared_from_this());
    } catch (const std::exception& e) {
      spdlog::error("handler threw: {}", e.what());
      Send(HttpResponse{500, "application/json", ErrorBody("internal", "internal error")});
    }
    if (body_size >= limits().trim_after_body_bytes) {
      // The body is gone with the request; the read buffer that held it shrinks back too.
      if (buffer_.capacity() > kReadChunk) buffer_.shrink_to_fit();
      shared_->trimmer->Request();
    }
  }

  // A streaming client sends nothing more, so a read completes only when it goes away (or
  // with bytes it should not have sent, which are dropped). Reading and writing at once is
  // allowed on a tcp_stream, and on an SSL stream over it.
  void WatchForClose() {
    stream_.async_read_some(net::buffer(probe_),
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (ec) return self->Close();
                              self->WatchForClose();
                            });
  }

  void OnWritten(beast::error_code ec, bool close) {
    if (ec) return Close();
    if (close) return drain_before_close_ ? DrainAndClose() : Close();
    ReadRequest();
  }

  // What is drained is dropped, so it is read below TLS, undeciphered.
  void DrainAndClose() {
    beast::error_code ec;
    Tcp().socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return Close();
    Tcp().expires_after(kLingerTimeout);
    Drain();
  }

  void Drain() {
    buffer_.clear();
    Tcp().async_read_some(buffer_.prepare(kReadChunk),
                          [self = shared_from_this()](beast::error_code ec, size_t) {
                            if (ec) return self->Close();  // the client closed, or time is up
                            self->Drain();
                          });
  }

  void WriteNext() {
    if (chunks_.empty() || writing_ || closed_ || !serializer_) return;
    writing_ = true;
    Chunk chunk = std::move(chunks_.front());
    chunks_.pop_front();
    auto self = shared_from_this();
    if (chunk.aborted) {
      writing_ = false;
      return Close();
    }
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

  void WriteRawNext() {
    if (raw_writes_.empty() || writing_ || closed_) return;
    writing_ = true;
    Chunk chunk = std::move(raw_writes_.front());
    raw_writes_.pop_front();
    net::async_write(stream_, net::buffer(*chunk.data),
                     [self = shared_from_this(), chunk](beast::error_code ec, size_t) {
                       self->writing_ = false;
                       if (chunk.done) chunk.done(!ec);
                       if (ec) return self->Close();
                       self->WriteRawNext();
                     });
  }

  // Gives the connection's place back (a handler may hold the session after its socket closed).
  void Release() {
    if (slot_) slot_->Release();
  }

  Stream stream_;
  net::steady_timer deadline_;  // of the TLS handshake, or of the header or body being read
  bool timed_out_ = false;
  beast::flat_buffer buffer_;
  std::shared_ptr<ServerShared> shared_;
  std::unique_ptr<ConnectionSlots::Slot> slot_;  // null: refused, holds no place
  SteadyTime first_header_by_;
  uint64_t requests_ = 0;  // read whole, on this connection
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpRequest request_;      // the request being read
  uint64_t body_limit_ = 0;  // its route's
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool drain_before_close_ = false;
  bool responded_ = false;
  bool closed_ = false;
  bool streaming_ = false;
  bool writing_ = false;
  std::shared_ptr<http::response<http::empty_body>> header_;
  std::shared_ptr<http::response_serializer<http::empty_body>> serializer_;
  std::deque<Chunk> chunks_;
  std::vector<std::function<void()>> on_close_;
  char probe_[512];
  // Once upgraded: the read buffer, and what is written raw.
  std::unique_ptr<char[]> raw_read_;
  std::deque<Chunk> raw_writes_;
};

// Accepting fails this way when the process or the system is out of file descriptors or
// memory: the connection stays in the backlog, so trying again at once would spin.
bool IsResourceShortage(const beast::error_code& ec) {
  namespace errc = boost::system::errc;
  return ec == errc::too_many_files_open || ec == errc::too_many_files_open_in_system ||
         ec == errc::no_buffer_space || ec == errc::not_enough_memory;
}

// The address a connection counts against: an IPv4 address, also when it arrives mapped into
// IPv6, or an IPv6 address's /64, the block one host or site is usually given (one host may use
// any address in it).
std::string AddressOf(const tcp::socket& socket) {
  beast::error_code ec;
  auto endpoint = socket.remote_endpoint(ec);
  if (ec) return "?";
  net::ip::address address = endpoint.address();
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return net::ip::make_address_v4(net::ip::v4_mapped, address.to_v6()).to_string();
  }
  if (address.is_v4()) return address.to_string();
  auto bytes = address.to_v6().to_bytes();
  std::fill(bytes.begin() + 8, bytes.end(), 0);
  return net::ip::address_v6(bytes).to_string() + "/64";
}

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(net::io_context& ioc, Handler handler, BodyLimit body_limit, HttpLimits limits)
      : acceptor(ioc),
        backoff(ioc),
        shared(std::make_shared<ServerShared>(ioc, std::move(handler), std::move(body_limit),
                                              limits)) {}

  void Accept() {
    acceptor.async_accept([self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
      if (!self->acceptor.is_open()) return;
      if (ec) return self->OnAcceptError(ec);
      if (self->short_of_resources) {
        spdlog::info("accepting connections again");
        self->short_of_resources = false;
      }
      socket.set_option(tcp::no_delay(true), ec);
      self->Serve(std::move(socket));
      self->Accept();
    });
  }

  void Serve(tcp::socket socket) {
    if (shared->tls) return Serve<TlsStream>(std::move(socket));
    Serve<PlainStream>(std::move(socket));
  }

  // A TLS connection counts against the caps from its first byte, handshake included.
  template <typename Stream>
  void Serve(tcp::socket socket) {
    std::string address = AddressOf(socket);
    auto session = std::make_shared<Session<Stream>>(std::move(socket), shared);
    ConnectionSlots::Taken taken =
        shared->slots.Take(address, [weak = std::weak_ptr<Session<Stream>>(session)] {
          if (auto session = weak.lock()) session->CloseToMakeRoom();
        });
    NoteRoomMade(taken.closed);
    if (taken.slot) {
      full = false;
      session->Start(std::move(taken.slot));
      return;
    }
    const size_t max = shared->limits.max_connections;
    const size_t per_address = shared->limits.max_connections_per_address;
    std::string message;
    if (taken.refusal == ConnectionSlots::Refusal::kAddressFull) {
      if (taken.first_refusal) {
        spdlog::warn(
            "{} holds {} connections, the most one address may, none of which may be closed "
            "to make room: refusing its new ones",
            address, per_address);
      }
      message = fmt::format(
          "{} has {} connections open to the master, the most one address may; try again later",
          address, per_address);
    } else {
      if (!full) {
        spdlog::warn(
            "{} connections open, the limit, none of which may be closed to make room: "
            "refusing new ones",
            max);
      }
      full = true;
      message = fmt::format("the master has {} connections open, its limit; try again later", max);
    }
    session->StartRefused(503, "unavailable", std::move(message), {{"Retry-After", "1"}});
  }

  // Logged in aggregate: a flood of connections is a line every few seconds.
  void NoteRoomMade(size_t closed) {
    if (closed == 0) return;
    closed_unreported += closed;
    const SteadyTime now = std::chrono::steady_clock::now();
    if (room_reported_at && now - *room_reported_at < kRoomReportInterval) return;
    spdlog::warn(
        "connections ran short: closed {} idle or unfinished connection{} to make room "
        "for new ones",
        closed_unreported, closed_unreported == 1 ? "" : "s");
    closed_unreported = 0;
    room_reported_at = now;
  }

  void OnAcceptError(const beast::error_code& ec) {
    if (!IsResourceShortage(ec)) {
      spdlog::debug("accept: {}", ec.message());
      return Accept();  // e.g. a connection reset before it was accepted
    }
    // Connections took every descriptor: from now on they hold fewer, so that opening a log
    // file or the database still works while a flood of them goes on.
    const size_t open = shared->slots.size();
    const size_t kept = shared->limits.descriptors_kept_free;
    // Never below 16, so that descriptors spent by a burst of files cannot ratchet it to none.
    const size_t cap = std::max<size_t>(16, open > kept ? open - kept : 0);
    if (cap < shared->slots.limits().max_connections) {
      spdlog::warn(
          "out of file descriptors ({}) with {} connections open: holding at most {} from now "
          "on, to keep {} descriptors for files",
          ec.message(), open, cap, kept);
      NoteRoomMade(shared->slots.LowerCap(cap));
    }
    // The connection waiting may be an agent's: it gets the descriptor of one doing nothing.
    if (shared->slots.CloseOne()) {
      NoteRoomMade(1);
      return Accept();
    }
    if (!short_of_resources) {
      spdlog::warn("cannot accept connections: {}; trying again every {}ms", ec.message(),
                   ToMillis(shared->limits.accept_backoff));
    }
    short_of_resources = true;
    backoff.expires_after(shared->limits.accept_backoff);
    backoff.async_wait([self = shared_from_this()](const beast::error_code& wait_ec) {
      if (!wait_ec && self->acceptor.is_open()) self->Accept();
    });
  }

  tcp::acceptor acceptor;
  net::steady_timer backoff;
  std::shared_ptr<ServerShared> shared;
  bool full = false;  // refusing connections for max_connections
  std::optional<SteadyTime> room_reported_at;
  size_t closed_unreported = 0;     // closed to make room since the last line about it
  bool short_of_resources = false;  // backing off after accept failed
};

HttpServer::HttpServer(net::io_context& ioc, Handler handler, BodyLimit body_limit,
                       HttpLimits limits)
    : impl_(std::make_shared<Impl>(ioc, std::move(handler), std::move(body_limit), limits)) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::UseTls(std::shared_ptr<net::ssl::context> context) {
  impl_->shared->tls = std::move(context);
}

bool HttpServer::tls() const { return impl_->shared->tls != nullptr; }

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
  impl_->backoff.cancel();
}

size_t HttpServer::connections() const { return impl_->shared->slots.size(); }

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
