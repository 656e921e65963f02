// A task's image being pulled onto its node before the task starts (docs/runtimes.md,
// "Pulling"): what the agent reports, from what the supervisor writes, and what the master
// shows in the job's message and events.
#pragma once

#include <cstdint>
#include <string>

#include "common/time.h"

namespace cohort {

struct ImagePull {
  std::string image;
  int64_t done_bytes = 0;   // of the layers the node did not have
  int64_t total_bytes = 0;  // 0: not known yet
  bool finished = false;    // pulled (a failed pull never is: the task's end says why)
  Duration took{};          // from the start of the pull to now, or to its end
  bool operator==(const ImagePull&) const = default;
};

// "pulling image X: 120Mi of 800Mi (14s)", "pulled image X: 800Mi in 42s".
std::string DescribeImagePull(const ImagePull& pull);

}  // namespace cohort
