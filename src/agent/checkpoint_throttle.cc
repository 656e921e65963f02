#include "agent/checkpoint_throttle.h"

#include <algorithm>

namespace cohort::agent {

void CheckpointThrottle::Noticed(Timestamp at) {
  noticed_ = noticed_ ? std::max(*noticed_, at) : at;
}

bool CheckpointThrottle::Advance(Timestamp now) {
  if (!noticed_ || (reported_ && *noticed_ <= *reported_)) return false;
  if (moved_at_ && now - *moved_at_ < kCheckpointReportInterval) return false;
  reported_ = noticed_;
  moved_at_ = now;
  return true;
}

}  // namespace cohort::agent
