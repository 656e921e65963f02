#include "sweep/placeholders.h"

namespace cohort::sweep {

StatusOr<std::vector<std::string>> PlaceholderNames(std::string_view text) {
  std::vector<std::string> names;
  size_t at = text.find(kPlaceholderStart);
  while (at != std::string_view::npos) {
    size_t begin = at + kPlaceholderStart.size();
    size_t end = text.find('}', begin);
    if (end == std::string_view::npos) {
      return Status::InvalidArgument("has a ${hp. without its closing }");
    }
    names.emplace_back(text.substr(begin, end - begin));
    at = text.find(kPlaceholderStart, end + 1);
  }
  return names;
}

std::string Substitute(std::string_view text, const std::map<std::string, std::string>& values) {
  std::string out;
  size_t from = 0;
  size_t at = text.find(kPlaceholderStart);
  while (at != std::string_view::npos) {
    size_t begin = at + kPlaceholderStart.size();
    size_t end = text.find('}', begin);
    if (end == std::string_view::npos) break;
    out.append(text.substr(from, at - from));
    auto it = values.find(std::string(text.substr(begin, end - begin)));
    if (it != values.end()) out += it->second;
    from = end + 1;
    at = text.find(kPlaceholderStart, from);
  }
  out.append(text.substr(from));
  return out;
}

}  // namespace cohort::sweep
