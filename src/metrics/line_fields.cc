#include "metrics/line_fields.h"

#include "common/strings.h"

namespace cohort::metrics {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

}  // namespace

std::optional<std::string_view> NextWord(std::string_view& rest) {
  while (!rest.empty() && IsBlank(rest.front())) rest.remove_prefix(1);
  if (rest.empty()) return std::nullopt;
  size_t end = 0;
  while (end < rest.size() && !IsBlank(rest[end])) ++end;
  std::string_view word = rest.substr(0, end);
  rest.remove_prefix(end);
  return word;
}

std::string Shown(std::string_view text) {
  constexpr size_t kShown = 40;
  std::string shown = ValidUtf8(text.substr(0, kShown));
  if (text.size() > kShown) shown += "...";
  return shown;
}

}  // namespace cohort::metrics
