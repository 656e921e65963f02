#include "model/account.h"

#include <fmt/format.h>

namespace cohort {

const char* TeamRoleName(TeamRole role) { return NameOf(kTeamRoleNames, role); }
std::optional<TeamRole> ParseTeamRole(std::string_view name) { return Parse(kTeamRoleNames, name); }
const char* TokenKindName(TokenKind kind) { return NameOf(kTokenKindNames, kind); }
std::optional<TokenKind> ParseTokenKind(std::string_view name) {
  return Parse(kTokenKindNames, name);
}

Status ValidateUserName(std::string_view name, std::string_view field) {
  auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '@' || c == '-';
  };
  bool ok = !name.empty() && name.size() <= 64 && name.front() != '.' && name.front() != '-';
  for (char c : name) ok = ok && allowed(c);
  if (ok) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "{}: \"{}\" is not a user name: use 1-64 letters, digits, '.', '_', '@' or '-', not "
      "starting with '.' or '-'",
      field, name));
}

}  // namespace cohort
