// Reading a request's query parameters and writing JSON answers: the one place every route
// file uses, so that all of them refuse the same things the same way.
#pragma once

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
// Parameters a route does not take are errors, not silently ignored (a misspelt filter would
// otherwise widen the answer).
Status CheckQuery(const HttpRequest& request, std::initializer_list<std::string_view> allowed);
// A JSON answer; text that is not UTF-8 is replaced, never an exception.
HttpResponse JsonResponse(int status, const Json& body);

}  // namespace cohort::api
