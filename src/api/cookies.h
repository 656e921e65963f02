// The Cookie request header (RFC 6265 5.4: "a=1; b=2"): one cookie's value, and the header
// without it (what a proxy forwards when the cookie is its own).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cohort::api {

// The value of the first cookie named `name`; nothing if none is.
std::optional<std::string> CookieValue(std::string_view header, std::string_view name);
// The header with every cookie named `name` left out (empty if none is left).
std::string WithoutCookie(std::string_view header, std::string_view name);

}  // namespace cohort::api
