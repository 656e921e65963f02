// Reading a request's query parameters and writing JSON answers: the one place every route
// file uses, so that all of them refuse the same things the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "api/http_server.h"
#include "common/status.h"
#include "model/json.h"

namespace cohort::api {

// The integer query parameter `name`, or `fallback` when it is absent or empty;
// kInvalidArgument naming it when it is not an integer in [min, max].
StatusOr<int64_t> QueryInt(const HttpRequest& r, const std::string& name, int64_t fallback,
                           int64_t min, int64_t max);
// The `limit` of a paged list: `fallback` without one; kInvalidArgument naming `limit` and the
// most a page holds (`max` `items`) for one that is not an integer from 1 to `max`.
StatusOr<size_t> PageLimit(const HttpRequest& request, size_t fallback, size_t max,
                           std::string_view items);
// Parameters a route does not take are errors, not silently ignored (a misspelt filter would
// otherwise widen the answer).
Status CheckQuery(const HttpRequest& request, std::initializer_list<std::string_view> allowed);
// A JSON answer; text that is not UTF-8 is replaced, never an exception.
HttpResponse JsonResponse(int status, const Json& body);
// JSON text as JsonResponse writes it, for answers put together from pieces.
std::string JsonText(const Json& value);

}  // namespace cohort::api
