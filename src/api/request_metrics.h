// How long the API takes to answer, for GET /metrics: one histogram per route, method and status
// class (cohort_api_request_duration_seconds, docs/observability.md).
//
// Labels come from the route table, never from the request: a route's pattern
// ("/api/v1/jobs/{id}"), and "other" for a path no route has, with methods outside the HTTP
// verbs as "other" too. So however many distinct URLs clients send, there are at most
// (routes + 1) x methods x 5 histograms.
//
// Not thread-safe: the API observes and writes it on the master's event loop.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "api/http_server.h"
#include "common/histogram.h"
#include "common/prometheus_text.h"
#include "common/time.h"

namespace cohort::api {

// The route label of a request that matched no route (404, 405).
inline constexpr std::string_view kUnmatchedRoute = "other";

// Upper bounds in seconds: the master's latency buckets, then 30 s and 60 s for long polls
// (GET /jobs/{id}?wait_version=, agents' syncs), which answer when something changes or time
// runs out.
const std::vector<double>& RequestBucketsSeconds();

class RequestMetrics {
 public:
  // `route`: the route's pattern, or kUnmatchedRoute; `status`: the HTTP status answered.
  void Observe(std::string_view route, std::string_view method, int status, Duration took);
  void Write(PrometheusText& out) const;

 private:
  // (route, method, status class)
  std::map<std::tuple<std::string, std::string, std::string>, Histogram> by_label_;
};

// Passes a call's answer on, telling `done` its status the first time one starts (Send, or the
// head of a stream: a log stream's latency is until its first byte, not its end).
class TimedResponder final : public ForwardingResponder {
 public:
  TimedResponder(std::shared_ptr<Responder> inner, std::function<void(int status)> done)
      : ForwardingResponder(std::move(inner)), done_(std::move(done)) {}

  void Send(HttpResponse response) override {
    Done(response.status);
    ForwardingResponder::Send(std::move(response));
  }
  void StartStream(int status, std::string content_type,
                   std::vector<std::pair<std::string, std::string>> headers = {}) override {
    Done(status);
    ForwardingResponder::StartStream(status, std::move(content_type), std::move(headers));
  }
  void Upgrade(std::string protocol, std::vector<std::pair<std::string, std::string>> headers,
               std::function<void(std::shared_ptr<ByteChannel>)> then) override {
    Done(101);
    ForwardingResponder::Upgrade(std::move(protocol), std::move(headers), std::move(then));
  }

 private:
  void Done(int status) {
    if (!done_) return;
    auto done = std::move(done_);
    done_ = nullptr;
    done(status);
  }

  std::function<void(int status)> done_;
};

}  // namespace cohort::api
