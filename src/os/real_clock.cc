#include "os/real_clock.h"

#include <chrono>

namespace cohort {

Timestamp RealClock::Now() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
}

MonoTime RealClock::Monotonic() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::steady_clock::now());
}

}  // namespace cohort
