// The master's event loop and the API's io_context run by hand, and a responder that keeps the
// answer: how unit tests and the API fuzzer drive the real ApiServer and Master without a socket
// or a thread. A request goes to ApiServer::Handle, then Settle() runs what it set off.
#pragma once

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <deque>
#include <functional>

#include "api/http_server.h"
#include "master/event_loop.h"

namespace cohort::api {

class HandRunLoop final : public master::EventLoop {
 public:
  void Post(std::function<void()> work) override { queue_.push_back(std::move(work)); }
  // Timers are not run: long polls wait for real time, and are cancelled when the API stops.
  void RunAfter(Duration, std::function<void()>) override {}

  // Runs the master's posted work until none is left; returns how much ran.
  size_t RunPosted();
  // Runs posted work and the io_context's ready handlers, round after round, until a round finds
  // neither. False if work was still coming after `max_rounds`: a loop that never settles.
  bool Settle(boost::asio::io_context& ioc, int max_rounds = 1000);
  // Settles, and while `answered` is false waits for what another thread brings back to the
  // io_context (a store read's answer: the API holds work on the io_context while one is under
  // way), then settles again; up to `max` in all. False if it never answered.
  bool SettleUntil(boost::asio::io_context& ioc, const std::function<bool()>& answered,
                   std::chrono::milliseconds max = std::chrono::seconds(30));

 private:
  std::deque<std::function<void()>> queue_;
};

// Keeps the first answer, with a stream's chunks appended to its body, and counts answers (a
// handler must give exactly one).
class RecordingResponder final : public Responder {
 public:
  void Send(HttpResponse response) override {
    if (++answers == 1) this->response = std::move(response);
  }
  void StartStream(int status, std::string content_type,
                   std::vector<std::pair<std::string, std::string>> headers = {}) override {
    if (++answers == 1)
      response = HttpResponse{status, std::move(content_type), "", std::move(headers)};
  }
  void WriteChunk(std::string data, std::function<void(bool)> done) override {
    response.body += data;
    done(true);
  }
  void EndStream() override { ended = true; }
  void AbortStream() override { aborted = true; }
  bool closed() const override { return false; }
  void MarkAuthenticated() override { authenticated = true; }

  int answers = 0;
  HttpResponse response;
  bool ended = false;          // a stream's end
  bool aborted = false;        // a stream cut short
  bool authenticated = false;  // the server said the request carried a valid credential
};

}  // namespace cohort::api
