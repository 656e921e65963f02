// Who may use the cluster: users, their teams and roles, and the tokens that prove who a caller
// is (docs/security.md). Value types only: the checks live in auth/, the storage in state/.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/enum_names.h"
#include "common/status.h"
#include "common/time.h"

namespace cohort {

// A user's role in one team, weakest first: a viewer reads the team's jobs, logs and specs; a
// member also submits to the team and changes its own jobs; a team admin changes every job of
// the team and its members.
enum class TeamRole { kViewer, kMember, kAdmin };
inline constexpr auto kTeamRoleNames = std::to_array<EnumName<TeamRole>>({
    {TeamRole::kViewer, "viewer"},
    {TeamRole::kMember, "member"},
    {TeamRole::kAdmin, "admin"},
});
const char* TeamRoleName(TeamRole role);
std::optional<TeamRole> ParseTeamRole(std::string_view name);

struct User {
  std::string name;
  // A cluster admin may do anything: users, teams and quotas, nodes, every job.
  bool admin = false;
  std::map<std::string, TeamRole> teams;
  // The Unix account its tasks run as, when the admin set one; otherwise the account named
  // like the user.
  std::optional<int64_t> uid;
  std::optional<int64_t> gid;
  // Where the user's jobs go when they name no team, when an admin chose it: needed by a user
  // who may submit to several teams (auth::TeamForJobs).
  std::optional<std::string> default_team;
  Timestamp created_at;
};

// A user's name: 1-64 of letters, digits, '.', '_', '@' and '-', not starting with '.' or '-'
// (it names a Unix account on the agents). InvalidArgument naming `field` otherwise.
Status ValidateUserName(std::string_view name, std::string_view field = "name");

// What a token stands for: a user's API calls, an agent's node, or the right to join the
// cluster as a new node.
enum class TokenKind { kUser, kNode, kJoin };
inline constexpr auto kTokenKindNames = std::to_array<EnumName<TokenKind>>({
    {TokenKind::kUser, "user"},
    {TokenKind::kNode, "node"},
    {TokenKind::kJoin, "join"},
});
const char* TokenKindName(TokenKind kind);
std::optional<TokenKind> ParseTokenKind(std::string_view name);

// What the master keeps of a token: never the secret, only its hash (auth/token.h).
struct TokenRecord {
  std::string id;  // the public part of the token: names it in lists and revocations
  TokenKind kind = TokenKind::kUser;
  std::string subject;      // the user (kUser) or the node (kNode); empty for kJoin
  std::string description;  // what the owner called it: "laptop", "ci"
  std::string hash;         // hex SHA-256 of the whole token
  Timestamp created_at;
  std::optional<Timestamp> expires_at;
  std::optional<Timestamp> revoked_at;

  bool ValidAt(Timestamp now) const { return !revoked_at && (!expires_at || now < *expires_at); }
};

}  // namespace cohort
