// The default policy's knobs as people write them (flags of `cohortd master` and `cohort sim
// run`): one parser for both, so that they mean the same everywhere.
#pragma once

#include <string>

#include "common/status.h"
#include "scheduler/scheduler.h"

namespace cohort::scheduler {

struct PolicyTuning {
  std::string levels;                  // "1h,16h": GPU time at which a job moves to the next level
  std::string promote_after;           // "2h"
  std::string promote_factor;          // "2"
  std::string max_wait;                // "24h"
  std::string protected_quantum;       // "1h"
  std::string min_victim_level;        // "2"
  std::string level_preemption_delay;  // "30m"
  std::string move_after;              // "1m", or "off"
};

// Sets what is given (empty fields leave `config` as it is). Errors name the flag and the reason.
Status ApplyTuning(const PolicyTuning& tuning, SchedulerConfig& config);

}  // namespace cohort::scheduler
