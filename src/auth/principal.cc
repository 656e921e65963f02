#include "auth/principal.h"

#include <fmt/format.h>

namespace cohort::auth {

Principal Principal::ForUser(const User& user, std::string token_id) {
  Principal p;
  p.kind = CallerKind::kUser;
  p.name = user.name;
  p.admin = user.admin;
  p.teams.insert(user.teams.begin(), user.teams.end());
  p.token_id = std::move(token_id);
  return p;
}

std::optional<TeamRole> Principal::RoleIn(std::string_view team) const {
  auto it = teams.find(team);
  if (it == teams.end()) return std::nullopt;
  return it->second;
}

std::string Principal::Describe() const {
  switch (kind) {
    case CallerKind::kAnonymous:
      return "an anonymous caller";
    case CallerKind::kUser:
      return fmt::format("user {}", name);
    case CallerKind::kNode:
      return fmt::format("node {}", name);
    case CallerKind::kJoin:
      return "the join token";
  }
  return "?";
}

bool IsAdmin(const Principal& p) { return p.is_user() && p.admin; }

bool CanSubmitTo(const Principal& p, std::string_view team) {
  if (IsAdmin(p)) return true;
  auto role = p.RoleIn(team);
  return p.is_user() && role && *role >= TeamRole::kMember;
}

bool CanReadJob(const Principal& p, std::string_view owner, std::string_view team) {
  if (!p.is_user()) return false;
  return p.admin || p.name == owner || p.RoleIn(team).has_value();
}

bool CanChangeJob(const Principal& p, std::string_view owner, std::string_view team) {
  if (!p.is_user()) return false;
  return p.admin || p.name == owner || p.RoleIn(team) == TeamRole::kAdmin;
}

bool CanManageMembers(const Principal& p, std::string_view team) {
  if (!p.is_user()) return false;
  return p.admin || p.RoleIn(team) == TeamRole::kAdmin;
}

bool CanManageTeamSecrets(const Principal& p, std::string_view team) {
  if (!p.is_user()) return false;
  return p.admin || p.RoleIn(team) == TeamRole::kAdmin;
}

}  // namespace cohort::auth
