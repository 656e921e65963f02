#include "model/run_as.h"

#include <algorithm>

namespace cohort {
namespace {

constexpr size_t kMaxUnixNameLength = 32;  // what useradd(8) accepts

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

}  // namespace

std::optional<std::string> UnixAccountNameProblem(std::string_view name) {
  const std::string kRule =
      "must be 1 to 32 letters, digits, '.', '_' or '-' (and may end in '$'), not starting with "
      "'-'";
  if (name.empty() || name.size() > kMaxUnixNameLength || name[0] == '-') return kRule;
  std::string_view body = name.back() == '$' ? name.substr(0, name.size() - 1) : name;
  if (body.empty() || !std::all_of(body.begin(), body.end(), NameChar)) return kRule;
  if (name == "." || name == "..") return std::string("must not be \".\" or \"..\"");
  if (std::all_of(body.begin(), body.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::string("must not be all digits: it would read as a uid");
  }
  return std::nullopt;
}

}  // namespace cohort
