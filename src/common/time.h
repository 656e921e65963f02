// Time as data. Daemons read the time through a Clock so that tests can move it by hand; the
// scheduler never reads a clock at all: `now` is a field of its input. The clock of the machine,
// RealClock, lives in os/real_clock.h, out of reach of the pure modules.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "common/status.h"

namespace cohort {

using Duration = std::chrono::microseconds;
// Wall-clock time with microsecond resolution (latencies of tens of milliseconds are measured).
using Timestamp = std::chrono::time_point<std::chrono::system_clock, std::chrono::microseconds>;
// Time that only moves forward, at the rate time passes, whatever the wall clock is set to: what
// deadlines and silences are measured on (a node's liveness). Meaningless across processes.
using MonoTime = std::chrono::time_point<std::chrono::steady_clock, std::chrono::microseconds>;

inline int64_t ToMicros(Timestamp t) { return t.time_since_epoch().count(); }
inline Timestamp FromMicros(int64_t us) { return Timestamp(Duration(us)); }
inline int64_t ToMillis(Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// RFC 3339 in UTC with microseconds: 2026-11-22T10:04:05.123456Z.
std::string FormatTimestamp(Timestamp t);
StatusOr<Timestamp> ParseTimestamp(std::string_view text);

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Timestamp Now() const = 0;
  virtual MonoTime Monotonic() const = 0;
};

// A clock that only moves when told to. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Timestamp start = FromMicros(1'700'000'000'000'000)) : now_(start) {}
  Timestamp Now() const override;
  MonoTime Monotonic() const override;
  // Time passes: both clocks move.
  void Advance(Duration d);
  // The wall clock is set (stepped, either way): the monotonic clock does not move.
  void Set(Timestamp t);

 private:
  mutable std::mutex mu_;
  Timestamp now_;
  MonoTime monotonic_{std::chrono::hours(1)};
};

}  // namespace cohort
