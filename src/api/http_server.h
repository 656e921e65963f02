// A small asynchronous HTTP/1.1 server on Boost.Beast: every connection is served by callbacks
// on one io_context, so a client that follows logs for hours or reads slowly costs a socket and
// a few buffers, never a thread (docs/architecture.md, "Why an async server").
//
// Handlers may answer at once or later (long polls), exactly once, through their Responder, or
// stream a chunked body.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace boost::asio::ssl {
class context;
}

namespace cohort::api {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // decoded, without the query
  std::string target;  // as the request line had it: path and query, still encoded
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string remote;  // the client's address and port: "127.0.0.1:53412", "[::1]:53412"
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers = {};  // more fields, e.g. Allow
};

// A connection that switched protocols (Responder::Upgrade): bytes both ways, in the order
// written. Used from the server's event loop only.
class ByteChannel {
 public:
  virtual ~ByteChannel() = default;
  // `done` gets the next bytes the peer sends (at most 16 KiB), or an empty view once it has
  // closed or failed, after which the channel is closed. One read at a time.
  virtual void Read(std::function<void(std::string_view)> done) = 0;
  // Writes `data` after what was written before it; `done(false)` if the peer went away.
  virtual void Write(std::string data, std::function<void(bool)> done) = 0;
  virtual void Close() = 0;
  virtual bool closed() const = 0;
};

class Responder {
 public:
  virtual ~Responder() = default;
  // Sends a whole response. Only the first call has an effect.
  virtual void Send(HttpResponse response) = 0;
  // Starts a chunked response, with `headers` besides (a proxied answer's own); then WriteChunk
  // any number of times and EndStream once, or AbortStream.
  virtual void StartStream(int status, std::string content_type,
                           std::vector<std::pair<std::string, std::string>> headers = {}) = 0;
  // `done(true)` once the chunk is written; `done(false)` if the client went away.
  virtual void WriteChunk(std::string data, std::function<void(bool)> done) = 0;
  virtual void EndStream() = 0;
  // Ends a stream that cannot be finished (what it relays broke off): the connection closes
  // after what was written, without the last chunk, so the client sees the answer cut short
  // rather than complete. A responder that cannot tell does nothing.
  virtual void AbortStream() {}
  virtual bool closed() const = 0;
  // `callback` runs once when the connection closes (at once if it has), during a stream even
  // while nothing is being written: how a follower of a silent job learns that its reader left.
  // A responder that cannot tell never calls it.
  virtual void OnClose(std::function<void()> callback) { (void)callback; }
  // The request carried a valid credential: when connections run short, its connection is closed
  // to make room only after every stranger's that may be, and only while idle.
  virtual void MarkAuthenticated() {}
  // Answers 101 Switching Protocols to `protocol` (an HTTP/1.1 upgrade, RFC 9110 7.8), with
  // `headers` besides (a WebSocket's Sec-WebSocket-Accept), and then
  // hands the connection to `then`, which owns it from there: no timeouts but its own, never
  // closed to make room for others. A responder that cannot upgrade answers 501.
  virtual void Upgrade(std::string protocol,
                       std::vector<std::pair<std::string, std::string>> headers,
                       std::function<void(std::shared_ptr<ByteChannel>)> then) {
    (void)headers;
    (void)then;
    Send(HttpResponse{501, "application/json",
                      "{\"error\": {\"code\": \"unimplemented\", \"message\": \"this server "
                      "cannot switch to " +
                          protocol + "\"}}"});
  }
};

// Passes everything on to another responder: the base of responders that watch an answer go by
// (its timing, its audit entry) and override only what they watch.
class ForwardingResponder : public Responder {
 public:
  explicit ForwardingResponder(std::shared_ptr<Responder> inner) : inner_(std::move(inner)) {}
  void Send(HttpResponse response) override { inner_->Send(std::move(response)); }
  void StartStream(int status, std::string content_type,
                   std::vector<std::pair<std::string, std::string>> headers = {}) override {
    inner_->StartStream(status, std::move(content_type), std::move(headers));
  }
  void WriteChunk(std::string data, std::function<void(bool)> done) override {
    inner_->WriteChunk(std::move(data), std::move(done));
  }
  void EndStream() override { inner_->EndStream(); }
  void AbortStream() override { inner_->AbortStream(); }
  bool closed() const override { return inner_->closed(); }
  void OnClose(std::function<void()> callback) override { inner_->OnClose(std::move(callback)); }
  void MarkAuthenticated() override { inner_->MarkAuthenticated(); }
  void Upgrade(std::string protocol, std::vector<std::pair<std::string, std::string>> headers,
               std::function<void(std::shared_ptr<ByteChannel>)> then) override {
    inner_->Upgrade(std::move(protocol), std::move(headers), std::move(then));
  }

 protected:
  Responder& inner() { return *inner_; }

 private:
  std::shared_ptr<Responder> inner_;
};

using Handler = std::function<void(HttpRequest, std::shared_ptr<Responder>)>;
// The most body bytes a request for `method` and (decoded) `path` may carry; a longer body is
// refused with 413 before it is read (api/router.h keeps one limit per route).
using BodyLimit = std::function<uint64_t(std::string_view method, std::string_view path)>;

// What one client may take of the server: no request, slow client or flood of connections may
// hold more than this, so the master's one event-loop thread keeps serving everyone else.
struct HttpLimits {
  // Connections open at once. When they are all open, a new one is given the place of one doing
  // nothing for anyone (api/connection_slots.h): a stranger's idle or unfinished connection
  // first, oldest first; a request being served is never cut off. When none can be closed, the
  // new one is answered 503 and closed. Running out of file descriptors makes room the same way.
  size_t max_connections = 1024;
  // Descriptors kept for everything but connections (the database, log files, the store) once
  // the process ran out of them: the first time accept fails for want of one, the cap above
  // drops to the connections then open less this (16 at the least), for good.
  size_t descriptors_kept_free = 64;
  // Connections one client address holds at once (an IPv6 address counts by its /64); beyond
  // that a new one takes the place of one of the address's own, as above, or is answered 503.
  // 0: no cap.
  size_t max_connections_per_address = 128;
  // The request line and header fields together: more is a 431, or a 414 when the request line
  // alone is longer than max_target_bytes.
  uint32_t max_header_bytes = 16 * 1024;
  size_t max_target_bytes = 8 * 1024;
  // Between requests on a kept-alive connection (closed sooner when places run short).
  Duration idle_timeout = std::chrono::seconds(75);
  // For a new connection's first request header, from the connection's start (over TLS, the
  // handshake too); for a kept-alive connection's next one, from its first byte (a client that
  // trickles a header byte by byte, "slowloris", is cut off: 408). A connection that sent
  // nothing in that time is closed without an answer, as is one whose TLS handshake did not
  // finish. body_timeout is for the whole body after the header. Once a request is read there
  // is no timeout: long polls and log streams wait as long as they need.
  Duration header_timeout = std::chrono::seconds(5);
  Duration body_timeout = std::chrono::seconds(60);
  // When accepting fails for want of file descriptors, the pause before trying again (the
  // waiting connection stays in the backlog; retrying at once would spin).
  Duration accept_backoff = std::chrono::milliseconds(100);
  // A request with a body at least this big is followed by giving freed memory back to the
  // system (malloc_trim), at most once a second.
  uint64_t trim_after_body_bytes = 256 * 1024;
};

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& ioc, Handler handler, BodyLimit body_limit,
             HttpLimits limits = {});
  ~HttpServer();
  // Serves HTTPS with `context` (tls/context.h) instead of plain HTTP; call before Listen. The
  // limits hold as they are; the TLS handshake must finish within header_timeout.
  void UseTls(std::shared_ptr<boost::asio::ssl::context> context);
  bool tls() const;
  // Binds and starts accepting. `port` 0 picks a free port (see port()).
  Status Listen(const std::string& host, int port);
  int port() const;
  void Stop();
  // Connections open now (refused ones not counted).
  size_t connections() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// Splits "a=1&b=x%20y" into a map, percent-decoding keys and values.
std::map<std::string, std::string> ParseQuery(std::string_view query);
// `plus_is_space`: a '+' means a space (query strings), not in paths.
std::string PercentDecode(std::string_view text, bool plus_is_space);

}  // namespace cohort::api
