#include "api/router.h"

#include "common/strings.h"

namespace cohort::api {

std::optional<PathParams> MatchPath(std::string_view pattern, std::string_view path) {
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  std::vector<std::string> want = Split(pattern, '/');
  std::vector<std::string> got = Split(path, '/');
  if (want.size() != got.size()) return std::nullopt;
  PathParams params;
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string& w = want[i];
    if (w.size() > 2 && w.front() == '{' && w.back() == '}') {
      if (got[i].empty()) return std::nullopt;
      params.emplace(w.substr(1, w.size() - 2), got[i]);
    } else if (w != got[i]) {
      return std::nullopt;
    }
  }
  return params;
}

}  // namespace cohort::api
