#include "auth/sign_in_codes.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "auth/token.h"

namespace cohort::auth {
namespace {

// Where a refused code sends its holder: a fresh link is one command away.
constexpr std::string_view kGetANewOne = "run `cohort dashboard` for a new sign-in link";

}  // namespace

void SignInCodes::Prune(Timestamp now) {
  std::erase_if(codes_,
                [&](const auto& entry) { return now >= entry.second.expires_at + kRememberFor; });
  std::vector<std::map<std::string, Record>::const_iterator> dead;
  for (auto it = codes_.begin(); it != codes_.end(); ++it) {
    if (!Outstanding(it->second, now)) dead.push_back(it);
  }
  if (dead.size() <= limits_.total) return;
  std::sort(dead.begin(), dead.end(),
            [](const auto& a, const auto& b) { return a->second.issued_at < b->second.issued_at; });
  for (size_t i = 0; i + limits_.total < dead.size(); ++i) codes_.erase(dead[i]);
}

StatusOr<IssuedSignInCode> SignInCodes::Issue(const std::string& user, Timestamp now) {
  Prune(now);
  size_t mine = 0, all = 0;
  for (const auto& [id, r] : codes_) {
    if (!Outstanding(r, now)) continue;
    ++all;
    mine += r.user == user;
  }
  if (mine >= limits_.per_user) {
    return Status::TooManyRequests(fmt::format(
        "user {} already holds {} unused sign-in codes, the most one user may; use one of their "
        "links, or wait up to {} s for them to expire",
        user, mine, ToMillis(limits_.lifetime) / 1000));
  }
  if (all >= limits_.total) {
    return Status::TooManyRequests(fmt::format(
        "the master holds {} unused sign-in codes, the most it keeps; try again in a minute", all));
  }
  COHORT_ASSIGN_OR_RETURN(MintedToken minted, MintSecret(kSignInCodePrefix));
  if (codes_.count(minted.id)) {
    return Status::Internal("a sign-in code's id is taken: the random source repeats itself");
  }
  Record record{user, minted.hash, now, now + limits_.lifetime, false};
  codes_.emplace(minted.id, record);
  return IssuedSignInCode{std::move(minted.token), record.expires_at};
}

StatusOr<std::string> SignInCodes::Redeem(std::string_view code, Timestamp now) {
  auto id = SecretId(code, kSignInCodePrefix);
  auto it = id ? codes_.find(*id) : codes_.end();
  if (it == codes_.end() || !TokenMatches(code, it->second.hash)) {
    return Status::Unauthenticated(
        fmt::format("the sign-in code is not valid (malformed, unknown, or expired long ago); {}",
                    kGetANewOne));
  }
  Record& record = it->second;
  if (record.used) {
    return Status::Unauthenticated(
        fmt::format("the sign-in code was used already: each works once; {}", kGetANewOne));
  }
  if (now >= record.expires_at) {
    return Status::Unauthenticated(fmt::format("the sign-in code expired on {}; {}",
                                               FormatTimestamp(record.expires_at), kGetANewOne));
  }
  record.used = true;
  return record.user;
}

}  // namespace cohort::auth
