// The default policy's knobs as people write them (flags of `cohortd master` and `cohort sim
// run`): one parser for both, so that they mean the same everywhere.
#pragma once

#include <string>
#include <string_view>

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

// What a policy's name means, for `cohortd master --policy` and `cohort sim run --policy` alike:
// "fifo" is strict submission order (the classic baseline), every other policy backfills, and
// "+backfill" or "-backfill" after any name says otherwise ("fifo+backfill", "las-backfill").
// The rest of the config is SchedulerConfig's defaults. kInvalidArgument names every accepted
// name.
StatusOr<SchedulerConfig> ConfigFor(std::string_view policy);

}  // namespace cohort::scheduler
