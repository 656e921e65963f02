// One-time codes that sign a user in to the dashboard (docs/security.md, "Dashboard sign-in"):
// a user with a token asks for one (`cohort dashboard`), opens the link that carries it, and the
// page exchanges it at once for a session (auth/sessions.h).
//
// A code is "cohc_" + a 16-hex-digit id + "_" + 43 characters of base64url (256 random bits), in
// a URL's fragment only. It is short-lived, good for one exchange, and bound to its user. Kept in
// memory only, as its SHA-256, like a token (auth/token.h): a master restart forgets every code,
// which costs a user one more `cohort dashboard`. Time is an argument (the master's clock). Not
// thread-safe: the master's event loop only.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/time.h"

namespace cohort::auth {

inline constexpr std::string_view kSignInCodePrefix = "cohc_";

struct SignInCodeLimits {
  Duration lifetime = std::chrono::minutes(2);
  // Codes not yet used nor expired: of one user, and of everyone together. Used and expired
  // codes are remembered (to say why one is refused) for kRememberFor, and at most `total` of
  // them.
  size_t per_user = 5;
  size_t total = 1000;
};

struct IssuedSignInCode {
  std::string code;  // shown once, never stored
  Timestamp expires_at;
};

class SignInCodes {
 public:
  // How long after its expiry a used or expired code is still recognised as such (after that,
  // it is refused as unknown).
  static constexpr Duration kRememberFor = std::chrono::minutes(10);

  explicit SignInCodes(SignInCodeLimits limits) : limits_(limits) {}

  // A new code for `user`. kTooManyRequests when the user, or everyone, holds as many unused
  // codes as the limits allow; kInternal without random bytes.
  StatusOr<IssuedSignInCode> Issue(const std::string& user, Timestamp now);
  // The user the code was issued to; the code is used up. kUnauthenticated, with a message that
  // says whether it was malformed or unknown, used already, or expired (never quoting it).
  StatusOr<std::string> Redeem(std::string_view code, Timestamp now);

  const SignInCodeLimits& limits() const { return limits_; }
  // Codes remembered now, used and expired ones included (for the tests of the bounds).
  size_t size() const { return codes_.size(); }

 private:
  struct Record {
    std::string user;
    std::string hash;
    Timestamp issued_at;
    Timestamp expires_at;
    bool used = false;
  };
  bool Outstanding(const Record& r, Timestamp now) const { return !r.used && now < r.expires_at; }
  // Forgets codes past kRememberFor, then the oldest used or expired ones beyond `total`.
  void Prune(Timestamp now);

  SignInCodeLimits limits_;
  std::map<std::string, Record, std::less<>> codes_;  // by id
};

}  // namespace cohort::auth
