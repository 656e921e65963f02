#include "auth/sessions.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "auth/token.h"

namespace cohort::auth {
namespace {

constexpr std::string_view kSignInAgain = "run `cohort dashboard` for a new sign-in link";

}  // namespace

void Sessions::Prune(Timestamp now) {
  std::erase_if(sessions_, [&](const auto& entry) {
    return now >= entry.second.session.expires_at + kRememberFor;
  });
  std::vector<std::map<std::string, Record>::const_iterator> dead;
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
    if (!Valid(it->second.session, now)) dead.push_back(it);
  }
  if (dead.size() <= limits_.total) return;
  std::sort(dead.begin(), dead.end(), [](const auto& a, const auto& b) {
    return a->second.session.created_at < b->second.session.created_at;
  });
  for (size_t i = 0; i + limits_.total < dead.size(); ++i) sessions_.erase(dead[i]);
}

StatusOr<OpenedSession> Sessions::Open(const std::string& user, Timestamp now) {
  Prune(now);
  std::vector<Session*> mine;
  size_t all = 0;
  for (auto& [id, r] : sessions_) {
    if (!Valid(r.session, now)) continue;
    ++all;
    if (r.session.user == user) mine.push_back(&r.session);
  }
  if (all >= limits_.total) {
    return Status::Unavailable(fmt::format(
        "the master holds {} dashboard sessions, the most it keeps; try again later", all));
  }
  // The user's oldest browser is signed out rather than the newest refused: whoever holds the
  // code is the user, and an old session is likelier forgotten than in use.
  if (mine.size() >= limits_.per_user) {
    auto oldest = std::min_element(
        mine.begin(), mine.end(),
        [](const Session* a, const Session* b) { return a->created_at < b->created_at; });
    (*oldest)->revoked_at = now;
  }
  COHORT_ASSIGN_OR_RETURN(MintedToken minted, MintSecret(kSessionPrefix));
  if (sessions_.count(minted.id)) {
    return Status::Internal("a session's id is taken: the random source repeats itself");
  }
  Session session{minted.id, user, now, now + limits_.lifetime, std::nullopt};
  sessions_.emplace(minted.id, Record{session, minted.hash});
  return OpenedSession{std::move(session), std::move(minted.token)};
}

StatusOr<Session> Sessions::Authenticate(std::string_view secret, Timestamp now) const {
  auto id = SecretId(secret, kSessionPrefix);
  auto it = id ? sessions_.find(*id) : sessions_.end();
  if (it == sessions_.end() || !TokenMatches(secret, it->second.hash)) {
    return Status::Unauthenticated(fmt::format(
        "the dashboard session is not valid (unknown, ended by a restart of the master, or "
        "expired long ago); {}",
        kSignInAgain));
  }
  const Session& s = it->second.session;
  if (s.revoked_at) {
    return Status::Unauthenticated(fmt::format("the dashboard session {} was signed out on {}; {}",
                                               s.id, FormatTimestamp(*s.revoked_at), kSignInAgain));
  }
  if (now >= s.expires_at) {
    return Status::Unauthenticated(fmt::format("the dashboard session {} expired on {}; {}", s.id,
                                               FormatTimestamp(s.expires_at), kSignInAgain));
  }
  return s;
}

Status Sessions::Revoke(std::string_view id, Timestamp now) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return Status::NotFound(fmt::format("dashboard session {} does not exist", id));
  }
  if (!it->second.session.revoked_at) it->second.session.revoked_at = now;
  return Status::Ok();
}

void Sessions::RevokeUser(std::string_view user, Timestamp now) {
  for (auto& [id, r] : sessions_) {
    if (r.session.user == user && !r.session.revoked_at) r.session.revoked_at = now;
  }
}

const Session* Sessions::Find(std::string_view id) const {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : &it->second.session;
}

}  // namespace cohort::auth
