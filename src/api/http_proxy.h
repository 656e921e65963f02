// Forwards one request to a server the master reaches on a node (a notebook's Jupyter, issue
// 31) and answers with what that server answered: the master as the authenticating proxy, so
// that the node needs no port open to the world and the person no route to the node.
//
//   - The request goes with its method, body and headers, less the hop-by-hop ones and the
//     caller's Authorization (a Cohort credential never reaches the backend), to
//     `target.path` on the backend, with `target.add_headers` (the backend's own credential).
//   - A plain answer comes back with its status, body and headers (Set-Cookie, Location, ...) as
//     they were: whole when it has no body or a known length up to `limits.max_response_bytes`;
//     otherwise (a large file, a length not said) relayed as chunks as they arrive, the master
//     holding one at a time, and cut short (not ended) if the backend breaks off. An answer of
//     one of `limits.whole_types` is always whole (a responder that rewrites it sees all of it),
//     and more than the bound is a 502 saying so.
//   - An upgrade (a WebSocket: Jupyter's kernel channels) is forwarded; once the backend answers
//     101, the client's connection is switched with the backend's headers and the bytes are
//     spliced both ways, one chunk in flight per direction; `on_client_bytes` sees every
//     chunk the client sends (a session's input) before it goes on.
//   - A backend that cannot be reached, or does not answer within the limits, is a 502 or 504
//     naming it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/http_server.h"
#include "common/time.h"

namespace cohort::api {

struct ProxyTarget {
  std::string name;  // for messages: "the notebook of job 12 on node gpu-3"
  std::string host;
  int port = 0;
  std::string path;  // the target on the backend, with its query
  std::vector<std::pair<std::string, std::string>> add_headers;
};

struct ProxyLimits {
  uint64_t max_response_bytes = 16 * 1024 * 1024;
  // Content types ("text/html") answered whole, within max_response_bytes, whatever their size.
  std::vector<std::string> whole_types;
  Duration connect_timeout = std::chrono::seconds(10);
  // From the request's write to the whole answer (or a 101).
  Duration answer_timeout = std::chrono::seconds(60);
};

// One forwarded call, and the connection it may switch to: closing it cuts both sides.
class ProxiedCall {
 public:
  virtual ~ProxiedCall() = default;
  virtual void Close() = 0;
  virtual bool closed() const = 0;
};

// The call keeps itself alive while it runs; the handle may outlive it.
std::shared_ptr<ProxiedCall> Proxy(boost::asio::io_context& ioc, const HttpRequest& request,
                                   std::shared_ptr<Responder> responder, ProxyTarget target,
                                   ProxyLimits limits = {},
                                   std::function<void(std::string_view)> on_client_bytes = nullptr);

// Whether a header is the connection's own (RFC 9110 7.6.1), never forwarded by a proxy.
bool IsHopByHopHeader(std::string_view lower_case_name);

}  // namespace cohort::api
