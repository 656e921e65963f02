#include "store/s3_access_issuer.h"

#include <spdlog/spdlog.h>

#include "common/units.h"
#include "store/open_store.h"
#include "store/s3_sts.h"

namespace cohort::store {
namespace {

using Clock = std::chrono::steady_clock;

// The most prefixes kept: one per job whose outputs are on their way.
constexpr size_t kMaxIssued = 10'000;
constexpr std::chrono::seconds kRetryAfter{30};

}  // namespace

S3AccessIssuer::S3AccessIssuer(S3Connection connection, S3Location location,
                               std::chrono::seconds lifetime)
    : connection_(std::move(connection)),
      location_(std::move(location)),
      lifetime_(std::clamp(lifetime, kMinScopedDuration, kMaxScopedDuration)) {}

S3AccessIssuer::~S3AccessIssuer() { worker_.Stop(); }

std::optional<StoreAccess> S3AccessIssuer::For(const AccessScope& scope) {
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  std::optional<StoreAccess> valid;
  if (auto it = issued_.find(scope); it != issued_.end()) {
    if (now < it->second.expires_at) valid = it->second.access;
    if (now < it->second.renew_at) return valid;
  }
  auto failed = failed_until_.find(scope);
  bool may_issue = failed == failed_until_.end() || now >= failed->second;
  if (may_issue && pending_.insert(scope).second) {
    worker_.Post([this, scope] { Issue(scope); });
  }
  return valid;
}

void S3AccessIssuer::Issue(const AccessScope& scope) {
  const auto started = Clock::now();
  const std::string& key_prefix = scope.prefix;
  auto credentials =
      IssueScopedCredentials(connection_, location_, key_prefix, lifetime_, {}, scope.reads);
  std::lock_guard lock(mu_);
  pending_.erase(scope);
  if (!credentials.ok()) {
    spdlog::error("cannot issue store credentials for {}: {} (tried again in {}s)", key_prefix,
                  credentials.status().message(), kRetryAfter.count());
    failed_until_[scope] = Clock::now() + kRetryAfter;
    return;
  }
  failed_until_.erase(scope);
  // Expired ones go first; then, past the bound, the oldest issue.
  for (auto it = issued_.begin(); it != issued_.end();) {
    it = started >= it->second.expires_at ? issued_.erase(it) : std::next(it);
  }
  while (issued_.size() >= kMaxIssued) {
    auto oldest = std::min_element(
        issued_.begin(), issued_.end(),
        [](const auto& a, const auto& b) { return a.second.expires_at < b.second.expires_at; });
    issued_.erase(oldest);
  }
  spdlog::info("store credentials issued for the keys under {}{} (for {})", key_prefix,
               scope.reads.empty() ? "" : fmt::format(" and {} read-only", scope.reads.size()),
               FormatDuration(lifetime_));
  S3Connection scoped = WithTemporaryCredentials(connection_, *credentials);
  issued_[scope] =
      Issued{S3Access(scoped, location_), started + lifetime_ / 2, started + lifetime_};
}

}  // namespace cohort::store
