#include "master/accounts.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <tuple>

#include "auth/token.h"

namespace cohort::master {
namespace {

// Unix ids: 0 is root, and 2^32-1 is (uid_t)-1, "no change" to setuid.
constexpr int64_t kMaxUnixId = 4'294'967'294;

Status CheckUnixId(const std::optional<int64_t>& id, std::string_view field) {
  if (!id || (*id >= 0 && *id <= kMaxUnixId)) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("{}: {} is not a Unix id: use 0 to {}", field, *id, kMaxUnixId));
}

// A task runs as a uid with its gid: an admin maps a user to both, or to neither.
Status CheckUnixIds(const User& user) {
  COHORT_RETURN_IF_ERROR(CheckUnixId(user.uid, "uid"));
  COHORT_RETURN_IF_ERROR(CheckUnixId(user.gid, "gid"));
  if (user.uid.has_value() != user.gid.has_value()) {
    return Status::InvalidArgument(
        "uid, gid: give both, or neither (the account named like the "
        "user)");
  }
  return Status::Ok();
}

// A user's jobs may default only to a team they may submit to (auth::CanSubmitTo).
bool MaySubmitTo(const User& user, const std::string& team) {
  auto it = user.teams.find(team);
  return user.admin || (it != user.teams.end() && it->second >= TeamRole::kMember);
}

Status CheckDefaultTeam(const User& user) {
  if (!user.default_team) return Status::Ok();
  COHORT_RETURN_IF_ERROR(ValidateTeamName(*user.default_team, "default_team"));
  if (MaySubmitTo(user, *user.default_team)) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "default_team: {} may not submit to team {}; make them a member first (cohort team "
      "add-member {} {})",
      user.name, *user.default_team, *user.default_team, user.name));
}

Status UnknownUser(std::string_view name) {
  return Status::NotFound(fmt::format("user {} does not exist; see `cohort user list`", name));
}

}  // namespace

Status ValidateTeamName(std::string_view name, std::string_view field) {
  static const std::regex kName("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
  if (std::regex_match(name.begin(), name.end(), kName)) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "{}: \"{}\" is not a team name: use 1 to 64 letters, digits, '.', '_' or '-'", field, name));
}

Status Accounts::Load() {
  COHORT_ASSIGN_OR_RETURN(auto users, store_.LoadUsers());
  COHORT_ASSIGN_OR_RETURN(auto tokens, store_.LoadTokens());
  users_.clear();
  tokens_.clear();
  for (auto& u : users) users_.emplace(u.name, std::move(u));
  for (auto& t : tokens) tokens_.emplace(t.id, std::move(t));
  return Status::Ok();
}

StatusOr<User> Accounts::CreateUser(User user) {
  COHORT_RETURN_IF_ERROR(ValidateUserName(user.name));
  COHORT_RETURN_IF_ERROR(CheckUnixIds(user));
  for (const auto& [team, role] : user.teams) {
    COHORT_RETURN_IF_ERROR(ValidateTeamName(team, "teams"));
  }
  COHORT_RETURN_IF_ERROR(CheckDefaultTeam(user));
  if (users_.count(user.name)) {
    return Status::AlreadyExists(fmt::format("user {} already exists", user.name));
  }
  user.created_at = clock_.Now();
  COHORT_RETURN_IF_ERROR(store_.SaveUser(user));
  users_.emplace(user.name, user);
  return user;
}

StatusOr<User> Accounts::UpdateUser(const std::string& name, const UserChange& change) {
  auto it = users_.find(name);
  if (it == users_.end()) return UnknownUser(name);
  User user = it->second;
  if (change.admin) user.admin = *change.admin;
  if (change.uid) user.uid = *change.uid;
  if (change.gid) user.gid = *change.gid;
  if (change.default_team) user.default_team = *change.default_team;
  COHORT_RETURN_IF_ERROR(CheckUnixIds(user));
  COHORT_RETURN_IF_ERROR(CheckDefaultTeam(user));
  COHORT_RETURN_IF_ERROR(store_.SaveUser(user));
  it->second = user;
  return user;
}

Status Accounts::DeleteUser(const std::string& name) {
  if (!users_.count(name)) return UnknownUser(name);
  // Tokens first: a crash in between leaves a user without tokens, never tokens that would
  // come back to life if a user of the same name were created again.
  COHORT_RETURN_IF_ERROR(RevokeAll(TokenKind::kUser, name));
  COHORT_RETURN_IF_ERROR(store_.DeleteUser(name));
  users_.erase(name);
  return Status::Ok();
}

StatusOr<User> Accounts::SetTeamRole(const std::string& name, const std::string& team,
                                     std::optional<TeamRole> role) {
  COHORT_RETURN_IF_ERROR(ValidateTeamName(team));
  auto it = users_.find(name);
  if (it == users_.end()) return UnknownUser(name);
  User user = it->second;
  if (role) {
    user.teams[team] = *role;
  } else if (user.teams.erase(team) == 0) {
    return Status::NotFound(fmt::format("user {} is not in team {}", name, team));
  }
  if (user.default_team == team && !MaySubmitTo(user, team)) user.default_team.reset();
  COHORT_RETURN_IF_ERROR(store_.SaveUser(user));
  it->second = user;
  return user;
}

const User* Accounts::FindUser(std::string_view name) const {
  auto it = users_.find(name);
  return it == users_.end() ? nullptr : &it->second;
}

std::vector<User> Accounts::ListUsers() const {
  std::vector<User> users;
  for (const auto& [name, user] : users_) users.push_back(user);
  return users;
}

StatusOr<IssuedToken> Accounts::Issue(TokenKind kind, std::string subject, std::string description,
                                      std::optional<Duration> ttl) {
  if (kind == TokenKind::kUser && !users_.count(subject)) return UnknownUser(subject);
  if (description.size() > 256) {
    return Status::InvalidArgument("description: longer than 256 bytes");
  }
  if (ttl && *ttl <= Duration::zero()) {
    return Status::InvalidArgument("expires_in: must be positive");
  }
  if (kind == TokenKind::kUser) {
    Timestamp now = clock_.Now();
    size_t valid = 0;
    for (const auto& [id, token] : tokens_) {
      valid += token.kind == kind && token.subject == subject && token.ValidAt(now);
    }
    if (valid >= kMaxValidTokensPerUser) {
      return Status::FailedPrecondition(fmt::format(
          "user {} already holds {} valid tokens, the most a user may: revoke unused ones with "
          "`cohort token revoke ID` (`cohort token list` shows them)",
          subject, valid));
    }
  }
  COHORT_RETURN_IF_ERROR(PruneDeadTokens(kind, subject));
  COHORT_ASSIGN_OR_RETURN(auth::MintedToken minted, auth::MintToken());
  TokenRecord record;
  record.id = minted.id;
  record.kind = kind;
  record.subject = std::move(subject);
  record.description = std::move(description);
  record.hash = minted.hash;
  record.created_at = clock_.Now();
  if (ttl) record.expires_at = record.created_at + *ttl;
  COHORT_RETURN_IF_ERROR(Add(record));
  return IssuedToken{std::move(record), std::move(minted.token)};
}

Status Accounts::PruneDeadTokens(TokenKind kind, const std::string& subject) {
  Timestamp now = clock_.Now();
  std::vector<const TokenRecord*> dead;
  for (const auto& [id, token] : tokens_) {
    if (token.kind == kind && token.subject == subject && !token.ValidAt(now)) {
      dead.push_back(&token);
    }
  }
  if (dead.size() <= kKeptDeadTokensPerSubject) return Status::Ok();
  std::sort(dead.begin(), dead.end(), [](const TokenRecord* a, const TokenRecord* b) {
    return std::tie(a->created_at, a->id) < std::tie(b->created_at, b->id);
  });
  std::vector<std::string> oldest;
  for (size_t i = 0; i + kKeptDeadTokensPerSubject < dead.size(); ++i) {
    oldest.push_back(dead[i]->id);
  }
  for (const std::string& id : oldest) {
    COHORT_RETURN_IF_ERROR(store_.DeleteToken(id));
    tokens_.erase(id);
  }
  return Status::Ok();
}

Status Accounts::Add(TokenRecord record) {
  if (tokens_.count(record.id)) {
    // 64 random bits: only a broken random source repeats one.
    return Status::Internal(fmt::format("token id {} is taken; try again", record.id));
  }
  COHORT_RETURN_IF_ERROR(store_.SaveToken(record));
  tokens_.emplace(record.id, std::move(record));
  return Status::Ok();
}

Status Accounts::Revoke(const std::string& id) {
  auto it = tokens_.find(id);
  if (it == tokens_.end()) {
    return Status::NotFound(fmt::format("token {} does not exist; see `cohort token list`", id));
  }
  if (it->second.revoked_at) return Status::Ok();
  TokenRecord record = it->second;
  record.revoked_at = clock_.Now();
  COHORT_RETURN_IF_ERROR(store_.SaveToken(record));
  it->second = std::move(record);
  return Status::Ok();
}

Status Accounts::RevokeAll(TokenKind kind, const std::string& subject) {
  for (const auto& [id, token] : tokens_) {
    if (token.kind == kind && token.subject == subject && !token.revoked_at) {
      COHORT_RETURN_IF_ERROR(Revoke(id));
    }
  }
  return Status::Ok();
}

const TokenRecord* Accounts::FindToken(std::string_view id) const {
  auto it = tokens_.find(id);
  return it == tokens_.end() ? nullptr : &it->second;
}

std::vector<TokenRecord> Accounts::ListTokens() const {
  std::vector<TokenRecord> tokens;
  for (const auto& [id, token] : tokens_) tokens.push_back(token);
  return tokens;
}

StatusOr<auth::Principal> Accounts::Authenticate(std::string_view token) const {
  auto id = auth::TokenId(token);
  if (!id.ok()) return Status::Unauthenticated(id.status().message());
  const TokenRecord* record = FindToken(*id);
  if (!record || !auth::TokenMatches(token, record->hash)) {
    return Status::Unauthenticated(
        "the token is not valid; log in again with a current token (cohort login)");
  }
  if (record->revoked_at) {
    return Status::Unauthenticated(fmt::format("token {} was revoked on {}; ask for a new one",
                                               record->id, FormatTimestamp(*record->revoked_at)));
  }
  if (record->expires_at && clock_.Now() >= *record->expires_at) {
    return Status::Unauthenticated(fmt::format("token {} expired on {}; make a new one", record->id,
                                               FormatTimestamp(*record->expires_at)));
  }
  auth::Principal p;
  p.token_id = record->id;
  switch (record->kind) {
    case TokenKind::kUser: {
      const User* user = FindUser(record->subject);
      if (!user) {
        return Status::Unauthenticated(fmt::format(
            "token {} belongs to user {}, who no longer exists", record->id, record->subject));
      }
      return auth::Principal::ForUser(*user, record->id);
    }
    case TokenKind::kNode:
      p.kind = auth::CallerKind::kNode;
      p.name = record->subject;
      return p;
    case TokenKind::kJoin:
      p.kind = auth::CallerKind::kJoin;
      return p;
  }
  return Status::Internal("a token of an unknown kind");
}

}  // namespace cohort::master
