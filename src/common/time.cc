#include "common/time.h"

#include <fmt/format.h>

#include <ctime>

#include "common/strings.h"

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
  // YYYY-MM-DDTHH:MM:SS, every field exactly as wide as that.
  auto field = [&](size_t at, size_t width, int min, int max) {
    return s.size() >= at + width ? ParseInt(std::string_view(s).substr(at, width), min, max)
                                  : std::nullopt;
  };
  auto year = field(0, 4, 0, 9999), month = field(5, 2, 1, 12), day = field(8, 2, 1, 31);
  auto hour = field(11, 2, 0, 23), minute = field(14, 2, 0, 59), second = field(17, 2, 0, 60);
  if (!year || !month || !day || !hour || !minute || !second || s[4] != '-' || s[7] != '-' ||
      s[10] != 'T' || s[13] != ':' || s[16] != ':') {
    return Status::InvalidArgument(fmt::format("\"{}\" is not an RFC 3339 time", s));
  }
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *month - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *minute;
  tm.tm_sec = *second;
  int64_t micros = 0;
  size_t pos = 19;
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

MonoTime ManualClock::Monotonic() const {
  std::lock_guard lock(mu_);
  return monotonic_;
}

void ManualClock::Advance(Duration d) {
  std::lock_guard lock(mu_);
  now_ += d;
  monotonic_ += d;
}

void ManualClock::Set(Timestamp t) {
  std::lock_guard lock(mu_);
  now_ = t;
}

}  // namespace cohort
