// Dashboard sessions (docs/security.md, "Dashboard sign-in"): what a sign-in code is exchanged
// for. A session stands for its user exactly as the user's token does (the caller is the same
// Principal), until it expires or is revoked (signed out).
//
// Its secret is "cohs_" + a 16-hex-digit id + "_" + 43 characters of base64url, sent as a bearer
// token like an API token. Kept in memory only, as its SHA-256: a master restart signs every
// dashboard out. Time is an argument (the master's clock). Not thread-safe: the master's event loop
// only.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/time.h"

namespace cohort::auth {

inline constexpr std::string_view kSessionPrefix = "cohs_";

struct SessionLimits {
  Duration lifetime = std::chrono::hours(12);
  // Valid sessions of one user (one more ends the oldest) and of everyone together (one more is
  // refused). Revoked and expired ones are remembered, to say why one is refused, until an hour
  // past their expiry, and at most `total` of them.
  size_t per_user = 20;
  size_t total = 10000;
};

struct Session {
  std::string id;
  std::string user;
  Timestamp created_at;
  Timestamp expires_at;
  std::optional<Timestamp> revoked_at;
};

struct OpenedSession {
  Session session;
  std::string secret;  // shown once, never stored
};

class Sessions {
 public:
  static constexpr Duration kRememberFor = std::chrono::hours(1);

  explicit Sessions(SessionLimits limits) : limits_(limits) {}

  // A new session of `user`. kUnavailable when everyone together holds `total` valid sessions;
  // kInternal without random bytes.
  StatusOr<OpenedSession> Open(const std::string& user, Timestamp now);
  // Whose session `secret` is. kUnauthenticated, saying whether it is unknown, signed out or
  // expired (never quoting it).
  StatusOr<Session> Authenticate(std::string_view secret, Timestamp now) const;
  // Revoking twice is fine. kNotFound for an id that names no session.
  Status Revoke(std::string_view id, Timestamp now);
  // Every session of `user` (the user is deleted).
  void RevokeUser(std::string_view user, Timestamp now);
  const Session* Find(std::string_view id) const;

  const SessionLimits& limits() const { return limits_; }
  size_t size() const { return sessions_.size(); }

 private:
  struct Record {
    Session session;
    std::string hash;
  };
  bool Valid(const Session& s, Timestamp now) const { return !s.revoked_at && now < s.expires_at; }
  void Prune(Timestamp now);

  SessionLimits limits_;
  std::map<std::string, Record, std::less<>> sessions_;  // by id
};

}  // namespace cohort::auth
