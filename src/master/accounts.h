// Users, their teams and roles, and the tokens that authenticate callers (docs/security.md).
//
// Every change is written to the store before memory changes, so a failed write changes nothing
// and needs no fail-stop. Like the master, not thread-safe: its event-loop thread only.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/principal.h"
#include "common/status.h"
#include "common/time.h"
#include "model/account.h"
#include "state/state_store.h"

namespace cohort::master {

// A token as it is handed out: the secret once, and what the master keeps of it.
struct IssuedToken {
  TokenRecord record;
  std::string token;
};

// What an admin may change of a user; unset fields stay as they are.
struct UserChange {
  std::optional<bool> admin;
  std::optional<std::optional<int64_t>> uid;  // set to nullopt: back to the account by name
  std::optional<std::optional<int64_t>> gid;
  // set to nullopt: their jobs go where auth::TeamForJobs chooses
  std::optional<std::optional<std::string>> default_team;
};

// What a user's tokens may cost the master: a user holds at most this many valid tokens, and
// of each subject's revoked and expired tokens (kept so that lists and the audit can name them)
// only the newest this many stay; older ones are deleted when a new one is issued.
inline constexpr size_t kMaxValidTokensPerUser = 100;
inline constexpr size_t kKeptDeadTokensPerSubject = 100;

class Accounts {
 public:
  Accounts(state::StateStore& store, const Clock& clock) : store_(store), clock_(clock) {}

  Status Load();

  // --- Users ---
  // kAlreadyExists; kInvalidArgument for a bad name, uid or gid.
  StatusOr<User> CreateUser(User user);
  // kNotFound; kInvalidArgument for a default team the user may not submit to.
  StatusOr<User> UpdateUser(const std::string& name, const UserChange& change);
  // Revokes the user's tokens too. kNotFound.
  Status DeleteUser(const std::string& name);
  // Gives `user` `role` in `team`, or takes the team away (nullopt); a default team the user
  // may no longer submit to is cleared with it. kNotFound.
  StatusOr<User> SetTeamRole(const std::string& user, const std::string& team,
                             std::optional<TeamRole> role);
  const User* FindUser(std::string_view name) const;
  std::vector<User> ListUsers() const;
  bool HasUsers() const { return !users_.empty(); }

  // --- Tokens ---
  // A new token for `subject` (a user for kUser, a node for kNode, empty for kJoin), valid for
  // `ttl` if given. kNotFound for a user token of an unknown user; kFailedPrecondition for a
  // user who holds kMaxValidTokensPerUser already.
  StatusOr<IssuedToken> Issue(TokenKind kind, std::string subject, std::string description,
                              std::optional<Duration> ttl = std::nullopt);
  // Keeps a token minted by the caller (the first start writes it to a file before it is
  // stored, so that no stored token is ever without its file).
  Status Add(TokenRecord record);
  // Revoking twice is fine. kNotFound.
  Status Revoke(const std::string& id);
  // Every valid token of this kind and subject: a node's old credential, a user's tokens.
  Status RevokeAll(TokenKind kind, const std::string& subject);
  const TokenRecord* FindToken(std::string_view id) const;
  std::vector<TokenRecord> ListTokens() const;

  // Who presents `token`. kUnauthenticated for a malformed, unknown, revoked or expired token,
  // or one whose user is gone; the message says which only to the token's real holder (a
  // matching hash), never quoting the token.
  StatusOr<auth::Principal> Authenticate(std::string_view token) const;

 private:
  state::StateStore& store_;
  const Clock& clock_;
  std::map<std::string, User, std::less<>> users_;
  std::map<std::string, TokenRecord, std::less<>> tokens_;

  // Deletes the oldest revoked or expired tokens of `subject` beyond kKeptDeadTokensPerSubject.
  Status PruneDeadTokens(TokenKind kind, const std::string& subject);
};

// A team name: 1 to 64 letters, digits, '.', '_' or '-' (what teams are created with).
Status ValidateTeamName(std::string_view name, std::string_view field = "team");

}  // namespace cohort::master
