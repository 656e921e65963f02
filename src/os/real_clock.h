// The machine's wall clock, for the daemons and the CLI. Code that takes a `const Clock&` gets
// this one in production and a ManualClock (common/time.h) in tests.
#pragma once

#include "common/time.h"

namespace cohort {

// Reads the system clock (CLOCK_REALTIME): it may jump when the machine's time is set.
// Thread-safe.
class RealClock final : public Clock {
 public:
  Timestamp Now() const override;
};

}  // namespace cohort
