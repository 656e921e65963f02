#include "api/router.h"

#include "common/strings.h"

namespace cohort::api {

std::optional<PathParams> MatchPath(std::string_view pattern, std::string_view path) {
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  std::vector<std::string> want = Split(pattern, '/');
  std::vector<std::string> got = Split(path, '/');
  const bool rest = !want.empty() && want.back().size() > 5 && want.back().front() == '{' &&
                    want.back().ends_with("...}");
  if (rest ? got.size() < want.size() : want.size() != got.size()) return std::nullopt;
  PathParams params;
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string& w = want[i];
    if (rest && i + 1 == want.size()) {
      // The segments left, as the client sent them: the handler checks what they may be.
      std::vector<std::string> tail(got.begin() + static_cast<std::ptrdiff_t>(i), got.end());
      params.emplace(w.substr(1, w.size() - 5), Join(tail, "/"));
    } else if (w.size() > 2 && w.front() == '{' && w.back() == '}') {
      if (got[i].empty()) return std::nullopt;
      params.emplace(w.substr(1, w.size() - 2), got[i]);
    } else if (w != got[i]) {
      return std::nullopt;
    }
  }
  return params;
}

}  // namespace cohort::api
