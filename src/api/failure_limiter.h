// How many failed logins a client address may make: a token bucket per address, so that
// guessing tokens costs time (docs/security.md, "Hardening"). Pure: the caller passes the time.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "common/time.h"

namespace cohort::api {

class FailureLimiter {
 public:
  struct Limits {
    double burst = 10;                          // failures allowed at once
    Duration refill = std::chrono::seconds(1);  // one more failure allowed per this long
    size_t max_addresses = 10'000;              // what the table may hold
  };

  FailureLimiter() : FailureLimiter(Limits{}) {}
  explicit FailureLimiter(Limits limits) : limits_(limits) {}

  // Zero if a request from `address` may try a token now; else how long until it may.
  Duration Wait(const std::string& address, Timestamp now);
  // A token from `address` was refused.
  void Failed(const std::string& address, Timestamp now);
  size_t tracked() const { return buckets_.size(); }

 private:
  struct Bucket {
    double failures = 0;  // outstanding, drained by one per `refill`
    Timestamp at;
  };
  double Drained(const Bucket& b, Timestamp now) const;

  Limits limits_;
  std::map<std::string, Bucket> buckets_;
};

// "10.1.2.3:41000" -> "10.1.2.3"; "[::1]:41000" -> "::1": a client is its address, not its port.
std::string ClientAddress(const std::string& remote);

}  // namespace cohort::api
