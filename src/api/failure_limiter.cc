#include "api/failure_limiter.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace cohort::api {

double FailureLimiter::Drained(const Bucket& b, Timestamp now) const {
  double refills =
      static_cast<double>((now - b.at).count()) / static_cast<double>(limits_.refill.count());
  return std::max(0.0, b.failures - std::max(0.0, refills));
}

Duration FailureLimiter::Wait(const std::string& address, Timestamp now) {
  auto it = buckets_.find(address);
  if (it == buckets_.end()) return Duration::zero();
  double left = Drained(it->second, now);
  if (left + 1 <= limits_.burst) return Duration::zero();
  double over = left + 1 - limits_.burst;
  auto wait = std::llround(over * static_cast<double>(limits_.refill.count()));
  return Duration(std::max<int64_t>(1, wait));
}

FailureLimiter::Bucket& FailureLimiter::BucketOf(const std::string& address, Timestamp now) {
  if (!buckets_.count(address) && buckets_.size() >= limits_.max_addresses) {
    // Forget the addresses whose failures have drained; if none has, the oldest one. Either
    // way the table stays bounded, whatever addresses a flood comes from.
    std::erase_if(buckets_, [&](const auto& entry) { return Drained(entry.second, now) == 0; });
    if (buckets_.size() >= limits_.max_addresses) {
      auto oldest =
          std::min_element(buckets_.begin(), buckets_.end(),
                           [](const auto& a, const auto& b) { return a.second.at < b.second.at; });
      buckets_.erase(oldest);
    }
  }
  return buckets_[address];
}

void FailureLimiter::Failed(const std::string& address, Timestamp now) {
  Bucket& b = BucketOf(address, now);
  b.failures = Drained(b, now) + 1;
  b.at = now;
}

int64_t FailureLimiter::Report(const std::string& address, Timestamp now) {
  Bucket& b = BucketOf(address, now);
  if (b.failures == 0 && b.unreported == 0) b.at = now;  // a new entry: not the oldest
  ++b.unreported;
  if (b.reported_at && now - *b.reported_at < limits_.report_every) return 0;
  b.reported_at = now;
  return std::exchange(b.unreported, 0);
}

std::string ClientAddress(const std::string& remote) {
  if (remote.starts_with('[')) {
    size_t close = remote.find(']');
    return close == std::string::npos ? remote : remote.substr(1, close - 1);
  }
  size_t colon = remote.rfind(':');
  return colon == std::string::npos ? remote : remote.substr(0, colon);
}

}  // namespace cohort::api
