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

std::optional<StoreAccess> S3AccessIssuer::For(const std::string& key_prefix) {
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  std::optional<StoreAccess> valid;
  if (auto it = issued_.find(key_prefix); it != issued_.end()) {
    if (now < it->second.expires_at) valid = it->second.access;
    if (now < it->second.renew_at) return valid;
  }
  auto failed = failed_until_.find(key_prefix);
  bool may_issue = failed == failed_until_.end() || now >= failed->second;
  if (may_issue && pending_.insert(key_prefix).second) {
    worker_.Post([this, key_prefix] { Issue(key_prefix); });
  }
  return valid;
}

void S3AccessIssuer::Issue(const std::string& key_prefix) {
  const auto started = Clock::now();
  auto credentials = IssueScopedCredentials(connection_, location_, key_prefix, lifetime_);
  std::lock_guard lock(mu_);
  pending_.erase(key_prefix);
  if (!credentials.ok()) {
    spdlog::error("cannot issue store credentials for {}: {} (tried again in {}s)", key_prefix,
                  credentials.status().message(), kRetryAfter.count());
    failed_until_[key_prefix] = Clock::now() + kRetryAfter;
    return;
  }
  failed_until_.erase(key_prefix);
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
  spdlog::info("store credentials issued for the keys under {} (for {})", key_prefix,
               FormatDuration(lifetime_));
  S3Connection scoped = WithTemporaryCredentials(connection_, *credentials);
  issued_[key_prefix] =
      Issued{S3Access(scoped, location_), started + lifetime_ / 2, started + lifetime_};
}

}  // namespace cohort::store
