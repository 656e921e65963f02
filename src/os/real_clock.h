// The machine's wall clock, for the daemons and the CLI. Code that takes a `const Clock&` gets
// this one in production and a ManualClock (common/time.h) in tests.
#pragma once

#include "common/time.h"

namespace cohort {

// Reads the system clock (CLOCK_REALTIME), which may jump when the machine's time is set, and
// the monotonic one (CLOCK_MONOTONIC), which does not. Thread-safe.
class RealClock final : public Clock {
 public:
  Timestamp Now() const override;
  MonoTime Monotonic() const override;
};

}  // namespace cohort
