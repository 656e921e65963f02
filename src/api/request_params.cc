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
  return HttpResponse{status, "application/json",
                      body.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

}  // namespace cohort::api
