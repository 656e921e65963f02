// How many failed logins a client address may make: a token bucket per address, so that
// guessing tokens costs time (docs/security.md, "Hardening"). Pure: the caller passes the time.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "common/time.h"

namespace cohort::api {

class FailureLimiter {
 public:
  struct Limits {
    double burst = 10;                          // failures allowed at once
    Duration refill = std::chrono::seconds(1);  // one more failure allowed per this long
    size_t max_addresses = 10'000;              // what the table may hold
    // Refusals are logged in aggregate: a line per address at most this often.
    Duration report_every = std::chrono::seconds(10);
  };

  FailureLimiter() : FailureLimiter(Limits{}) {}
  explicit FailureLimiter(Limits limits) : limits_(limits) {}

  // Zero if a request from `address` may try a token now; else how long until it may.
  Duration Wait(const std::string& address, Timestamp now);
  // A token from `address` was refused.
  void Failed(const std::string& address, Timestamp now);
  // A token from `address` was refused or held back: how many such calls to log now, in one
  // line (the first of an interval, and everything since the last line); 0 if not yet.
  int64_t Report(const std::string& address, Timestamp now);
  size_t tracked() const { return buckets_.size(); }

 private:
  struct Bucket {
    double failures = 0;  // outstanding, drained by one per `refill`
    Timestamp at;
    int64_t unreported = 0;  // refusals not yet logged
    std::optional<Timestamp> reported_at;
  };
  // The address's bucket, made room for when the table is full.
  Bucket& BucketOf(const std::string& address, Timestamp now);
  double Drained(const Bucket& b, Timestamp now) const;

  Limits limits_;
  std::map<std::string, Bucket> buckets_;
};

// "10.1.2.3:41000" -> "10.1.2.3"; "[::1]:41000" -> "::1": a client is its address, not its port.
std::string ClientAddress(const std::string& remote);

}  // namespace cohort::api
