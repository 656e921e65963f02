#include "api/request_params.h"

#include <fmt/format.h>

#include <vector>

#include "common/strings.h"

namespace cohort::api {

StatusOr<int64_t> QueryInt(const HttpRequest& r, const std::string& name, int64_t fallback,
                           int64_t min, int64_t max) {
  auto it = r.query.find(name);
  if (it == r.query.end() || it->second.empty()) return fallback;
  if (auto v = ParseInteger(it->second, min, max)) return *v;
  return Status::InvalidArgument(
      fmt::format("{}: \"{}\" is not an integer from {} to {}", name, it->second, min, max));
}

StatusOr<size_t> PageLimit(const HttpRequest& request, size_t fallback, size_t max,
                           std::string_view items) {
  auto it = request.query.find("limit");
  if (it == request.query.end() || it->second.empty()) return fallback;
  auto n = ParseInteger(it->second, INT64_MIN, INT64_MAX);
  if (n && *n > static_cast<int64_t>(max)) {
    return Status::InvalidArgument(
        fmt::format("limit: {} is more than a page holds; pages hold at most {} {} (default {}): "
                    "follow \"next\" for the rest",
                    *n, max, items, fallback));
  }
  if (!n || *n < 1) {
    return Status::InvalidArgument(
        fmt::format("limit: \"{}\" is not a page size; pages hold 1 to {} {} (default {})",
                    it->second, max, items, fallback));
  }
  return static_cast<size_t>(*n);
}

Status CheckQuery(const HttpRequest& request, std::initializer_list<std::string_view> allowed) {
  for (const auto& [name, value] : request.query) {
    bool known = false;
    for (auto a : allowed) known |= name == a;
    if (!known) {
      std::vector<std::string> names(allowed.begin(), allowed.end());
      return Status::InvalidArgument(
          fmt::format("{}: unknown query parameter; this route takes {}", name, Join(names, ", ")));
    }
  }
  return Status::Ok();
}

HttpResponse JsonResponse(int status, const Json& body) {
  return HttpResponse{status, "application/json", JsonText(body)};
}

std::string JsonText(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace cohort::api
