#include "model/spec_fields.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <vector>

namespace cohort {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
// neighbours each cost 1.
size_t EditDistance(std::string_view a, std::string_view b) {
  const size_t longer = std::max(a.size(), b.size());
  if (longer - std::min(a.size(), b.size()) > 2) return longer;  // far apart anyway
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string ChildPath(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

std::string IndexPath(const std::string& path, size_t i) { return fmt::format("{}[{}]", path, i); }

std::string DescribeSpecValue(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return v.dump();
    case Json::value_t::string: {
      std::string s = v.get<std::string>();
      if (s.size() > 60) s = s.substr(0, 57) + "...";
      return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    case Json::value_t::array:
      return v.empty() ? "an empty list" : "a list";
    case Json::value_t::object:
      return v.empty() ? "an empty mapping" : "a mapping";
    default:
      return "a binary value";
  }
}

std::string_view ClosestName(std::string_view given, std::span<const std::string_view> known) {
  std::string_view best;
  size_t best_distance = 3;
  const std::string lower = Lower(given);
  for (std::string_view k : known) {
    size_t d = EditDistance(lower, k);
    if (d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

std::string UnknownFieldHint(std::string_view given, std::span<const std::string_view> known) {
  if (std::string_view best = ClosestName(given, known); !best.empty()) {
    return fmt::format("did you mean \"{}\"?", best);
  }
  return fmt::format("expected one of: {}", fmt::join(known, ", "));
}

std::optional<std::string> IdentifierProblem(const Json& v, std::string_view what,
                                             size_t max_length) {
  if (!v.is_string()) return fmt::format("must be a string, got {}", DescribeSpecValue(v));
  const std::string& s = v.get_ref<const std::string&>();
  if (s.size() > max_length) {
    return fmt::format("must be at most {} characters, got {}", max_length, s.size());
  }
  auto allowed = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  };
  if (s.empty() || !std::isalnum(static_cast<unsigned char>(s[0])) ||
      !std::all_of(s.begin(), s.end(), allowed)) {
    return fmt::format(
        "{} is not a valid {}: use 1 to {} letters, digits, '.', '_' or '-', "
        "starting with a letter or digit",
        DescribeSpecValue(v), what, max_length);
  }
  return std::nullopt;
}

}  // namespace cohort
