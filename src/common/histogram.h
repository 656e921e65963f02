// A histogram of durations as Prometheus reads one: how many observations fell at or below each
// bucket's upper bound, their sum and their count. The bounds are fixed when it is made, so its
// memory and the lines it writes stay the same however much it observes.
//
// Not thread-safe: the master observes and reads it on its one event-loop thread.
#pragma once

#include <cstdint>
#include <vector>

#include "common/time.h"

namespace cohort {

// Upper bounds, in seconds, for what the master times: 0.1 ms (a pass over an idle cluster, a
// small GET) to 10 s (a pass that has stalled the event loop), about 2.5x apart.
inline const std::vector<double> kLatencyBucketsSeconds = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};

class Histogram {
 public:
  // `bounds`: finite upper bounds in seconds, strictly increasing; +Inf is implicit.
  explicit Histogram(std::vector<double> bounds = kLatencyBucketsSeconds);

  // A negative duration (the wall clock stepped back during what was timed) counts as 0.
  void Observe(Duration took);
  void ObserveSeconds(double seconds);

  const std::vector<double>& bounds() const { return bounds_; }
  // For each bound, the observations at or below it (so the counts never decrease); the +Inf
  // bucket is count().
  std::vector<uint64_t> CumulativeCounts() const;
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> in_bucket_;  // per bound, not cumulative; observations above all: none
  uint64_t count_ = 0;
  double sum_ = 0;
};

}  // namespace cohort
