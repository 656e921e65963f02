#include "api/cookies.h"

#include <vector>

namespace cohort::api {
namespace {

// Each "name=value" pair of the header, trimmed; a pair without '=' is a name with no value.
std::vector<std::string_view> Pairs(std::string_view header) {
  std::vector<std::string_view> pairs;
  while (!header.empty()) {
    size_t end = header.find(';');
    std::string_view pair = header.substr(0, end);
    while (!pair.empty() && (pair.front() == ' ' || pair.front() == '\t')) pair.remove_prefix(1);
    while (!pair.empty() && (pair.back() == ' ' || pair.back() == '\t')) pair.remove_suffix(1);
    if (!pair.empty()) pairs.push_back(pair);
    if (end == std::string_view::npos) break;
    header.remove_prefix(end + 1);
  }
  return pairs;
}

std::string_view NameOf(std::string_view pair) { return pair.substr(0, pair.find('=')); }

}  // namespace

std::optional<std::string> CookieValue(std::string_view header, std::string_view name) {
  for (std::string_view pair : Pairs(header)) {
    if (NameOf(pair) != name) continue;
    size_t equals = pair.find('=');
    if (equals == std::string_view::npos) return std::string();
    std::string_view value = pair.substr(equals + 1);
    // A quoted value (RFC 6265 4.1.1 allows DQUOTE *cookie-octet DQUOTE) is its inside.
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    return std::string(value);
  }
  return std::nullopt;
}

std::string WithoutCookie(std::string_view header, std::string_view name) {
  std::string kept;
  for (std::string_view pair : Pairs(header)) {
    if (NameOf(pair) == name) continue;
    if (!kept.empty()) kept += "; ";
    kept += pair;
  }
  return kept;
}

}  // namespace cohort::api
