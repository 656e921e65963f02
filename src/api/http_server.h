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
#include <utility>
#include <vector>

#include "common/status.h"

namespace cohort::api {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // decoded, without the query
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string remote;  // "127.0.0.1:53412"
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers = {};  // more fields, e.g. Allow
};

class Responder {
 public:
  virtual ~Responder() = default;
  // Sends a whole response. Only the first call has an effect.
  virtual void Send(HttpResponse response) = 0;
  // Starts a chunked response; then WriteChunk any number of times and EndStream once.
  virtual void StartStream(int status, std::string content_type) = 0;
  // `done(true)` once the chunk is written; `done(false)` if the client went away.
  virtual void WriteChunk(std::string data, std::function<void(bool)> done) = 0;
  virtual void EndStream() = 0;
  virtual bool closed() const = 0;
  // `callback` runs once when the connection closes (at once if it has), during a stream even
  // while nothing is being written: how a follower of a silent job learns that its reader left.
  // A responder that cannot tell never calls it.
  virtual void OnClose(std::function<void()> callback) { (void)callback; }
};

using Handler = std::function<void(HttpRequest, std::shared_ptr<Responder>)>;

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& ioc, Handler handler);
  ~HttpServer();
  // Binds and starts accepting. `port` 0 picks a free port (see port()).
  Status Listen(const std::string& host, int port);
  int port() const;
  void Stop();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// Splits "a=1&b=x%20y" into a map, percent-decoding keys and values.
std::map<std::string, std::string> ParseQuery(std::string_view query);
// `plus_is_space`: a '+' means a space (query strings), not in paths.
std::string PercentDecode(std::string_view text, bool plus_is_space);

}  // namespace cohort::api
