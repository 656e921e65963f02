// A route table for the API: method + path pattern -> handler and the largest body it takes, and
// the one matcher that picks a route for a request.
//
// A pattern is a path whose segments are literals or "{name}" (one whole, non-empty segment,
// handed to the handler by name): "/api/v1/jobs/{id}/events". A last segment "{name...}" takes
// the rest of the path, one segment or more, as one value ("a/b/c"; empty segments kept for the
// handler to refuse). A request path matches with or
// without one trailing slash. Routes are tried in order; the first whose method and pattern
// match wins.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cohort::api {

// The values of a pattern's "{name}" segments, by name.
using PathParams = std::map<std::string, std::string, std::less<>>;

// The parameters if `path` matches `pattern`, else nothing.
std::optional<PathParams> MatchPath(std::string_view pattern, std::string_view path);

// The body a request may carry unless its route says more: a GET's none, a kill's "{}".
inline constexpr uint64_t kSmallBodyLimit = 4 * 1024;

// `Access` is who may call a route (the API's own enum), handed back with the handler.
template <typename Handler, typename Access = int>
class Router {
 public:
  struct Route {
    std::string_view method;   // "GET", "POST", ...
    std::string_view pattern;  // "/api/v1/jobs/{id}"
    Handler handler;
    Access access{};
    // The most body bytes a request may carry; the server answers 413 to more before reading
    // it (api/http_server.h).
    uint64_t body_limit = kSmallBodyLimit;
  };

  // What a request found: a handler with its parameters, or, when no route has its method,
  // the methods the path does allow (none: no route has the path at all).
  struct Found {
    const Handler* handler = nullptr;
    Access access{};
    std::string_view pattern;  // of the route found; empty if none
    PathParams params;
    std::vector<std::string_view> allowed;
    uint64_t body_limit = kSmallBodyLimit;  // its route's; kSmallBodyLimit if none
  };

  explicit Router(std::vector<Route> routes) : routes_(std::move(routes)) {}

  Found Find(std::string_view method, std::string_view path) const {
    Found found;
    for (const Route& route : routes_) {
      auto params = MatchPath(route.pattern, path);
      if (!params) continue;
      if (route.method == method) {
        found.handler = &route.handler;
        found.access = route.access;
        found.pattern = route.pattern;
        found.params = std::move(*params);
        found.allowed.clear();
        found.body_limit = route.body_limit;
        return found;
      }
      found.allowed.push_back(route.method);
    }
    return found;
  }

 private:
  std::vector<Route> routes_;
};

}  // namespace cohort::api
