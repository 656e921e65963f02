#include "auth/principal.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

namespace cohort::auth {

Principal Principal::ForUser(const User& user, std::string token_id) {
  Principal p;
  p.kind = CallerKind::kUser;
  p.name = user.name;
  p.admin = user.admin;
  p.teams.insert(user.teams.begin(), user.teams.end());
  p.default_team = user.default_team;
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

StatusOr<std::string> TeamForJobs(const Principal& p, std::string_view fallback) {
  if (p.default_team) return *p.default_team;
  std::vector<std::string> teams;
  for (const auto& [team, role] : p.teams) {
    if (role >= TeamRole::kMember) teams.push_back(team);
  }
  if (teams.size() == 1) return teams[0];
  if (teams.empty() && IsAdmin(p)) return std::string(fallback);
  if (teams.empty()) {
    return Status::PermissionDenied(fmt::format(
        "{} is in no team they may submit to{}: ask an admin to add you to one (cohort team "
        "add-member TEAM {})",
        p.Describe(), p.teams.empty() ? "" : " (a viewer only)", p.name));
  }
  return Status::InvalidArgument(fmt::format(
      "{} may submit to teams {} and has no default team: name one with --team (or team: in "
      "the spec), or ask an admin to set your default (cohort user set {} --default-team {})",
      p.Describe(), fmt::join(teams, ", "), p.name, teams[0]));
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
