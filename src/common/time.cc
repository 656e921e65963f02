#include "common/time.h"

#include <fmt/format.h>

#include <cstdio>
#include <ctime>

namespace cohort {

std::string FormatTimestamp(Timestamp t) {
  int64_t us = ToMicros(t);
  int64_t secs = us / 1'000'000;
  int64_t frac = us % 1'000'000;
  if (frac < 0) {
    frac += 1'000'000;
    secs -= 1;
  }
  std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

StatusOr<Timestamp> ParseTimestamp(std::string_view text) {
  std::string s(text);
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return Status::InvalidArgument(fmt::format("\"{}\" is not an RFC 3339 time", s));
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  int64_t micros = 0;
  size_t pos = static_cast<size_t>(consumed);
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (digits < 6) micros = micros * 10 + (s[pos] - '0');
      ++digits;
      ++pos;
    }
    for (; digits < 6; ++digits) micros *= 10;
  }
  if (pos >= s.size() || s.substr(pos) != "Z") {
    return Status::InvalidArgument(fmt::format("\"{}\" is not an RFC 3339 UTC time", s));
  }
  int64_t secs = timegm(&tm);
  return FromMicros(secs * 1'000'000 + micros);
}

Timestamp ManualClock::Now() const {
  std::lock_guard lock(mu_);
  return now_;
}

void ManualClock::Advance(Duration d) {
  std::lock_guard lock(mu_);
  now_ += d;
}

void ManualClock::Set(Timestamp t) {
  std::lock_guard lock(mu_);
  now_ = t;
}

}  // namespace cohort
