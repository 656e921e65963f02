// Who is calling, once their token has been checked, and what that lets them do
// (docs/security.md, "Roles"). Pure: no clock, no storage; the master authenticates, the API
// asks these questions before it acts.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "model/account.h"

namespace cohort::auth {

enum class CallerKind {
  kAnonymous,  // no token: only the health check
  kUser,       // a user's token
  kNode,       // an agent's node credential: only its own node's agent routes
  kJoin,       // the cluster's join token: only registering a node
};

struct Principal {
  CallerKind kind = CallerKind::kAnonymous;
  std::string name;  // the user, or the node
  bool admin = false;
  std::map<std::string, TeamRole, std::less<>> teams;
  std::optional<std::string> default_team;  // as the admin set it (User::default_team)
  std::string token_id;

  static Principal ForUser(const User& user, std::string token_id);

  bool is_user() const { return kind == CallerKind::kUser; }
  // The user's role in `team`, if any.
  std::optional<TeamRole> RoleIn(std::string_view team) const;
  // "user ada", "node node-1", "the join token", "an anonymous caller": for messages and logs.
  std::string Describe() const;
};

// The questions the API asks. A job is named by its owner and team.
bool IsAdmin(const Principal& p);
// Submit to `team`: an admin, or a member or team admin of it.
bool CanSubmitTo(const Principal& p, std::string_view team);
// The team a job that names none goes to: the user's default team if an admin set one, else
// the one team they may submit to; for a cluster admin in no team, `fallback` (the cluster's
// default team). kPermissionDenied saying what to ask an admin for when the user may submit to
// no team; kInvalidArgument naming the teams and how to choose when they may submit to several.
StatusOr<std::string> TeamForJobs(const Principal& p, std::string_view fallback);
// See a job whole (spec, environment, events, logs): an admin, its owner, or anyone with a role
// in its team. Others see only what the scheduler shows of it (docs/security.md, "Listing").
bool CanReadJob(const Principal& p, std::string_view owner, std::string_view team);
// Kill or change a job: an admin, its owner, or an admin of its team.
bool CanChangeJob(const Principal& p, std::string_view owner, std::string_view team);
// Add and remove a team's members: an admin, or an admin of that team.
bool CanManageMembers(const Principal& p, std::string_view team);
// Set and delete a team's environment secrets: an admin, or an admin of that team. Nobody reads
// a value back.
bool CanManageTeamSecrets(const Principal& p, std::string_view team);

}  // namespace cohort::auth
