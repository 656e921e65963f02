// The default policy's tuning flags, for `cohortd master` and `cohort sim run` alike: one list of
// names and help texts, parsed by scheduler::ApplyTuning.
#pragma once

#include <CLI/CLI.hpp>

#include "scheduler/policy_tuning.h"

namespace cohort::cli {

inline void AddPolicyTuningFlags(CLI::App* cmd, scheduler::PolicyTuning& t) {
  cmd->add_option("--levels", t.levels,
                  "Policies default and las: GPU time at which a job moves to the next level, "
                  "e.g. 1h,16h (none: one level)");
  cmd->add_option("--promote-after", t.promote_after,
                  "Policy default: a waiting job is promoted after at least this long (2h)");
  cmd->add_option("--promote-factor", t.promote_factor,
                  "Policy default: ...or this many times the time it has run, if longer (2)");
  cmd->add_option("--max-wait", t.max_wait,
                  "Policy default: ...and after this long whatever it has run (24h)");
  cmd->add_option("--protected-quantum", t.protected_quantum,
                  "Policy default: a promoted job keeps its GPUs this long, or until it "
                  "checkpoints (1h)");
  cmd->add_option("--min-victim-level", t.min_victim_level,
                  "Policy default: only jobs of at least this level are preempted for jobs of "
                  "earlier levels (2)");
  cmd->add_option(
      "--level-preemption-delay", t.level_preemption_delay,
      "Policy default: a job preempts jobs of later levels only after waiting this long "
      "(30m)");
  cmd->add_option(
      "--move-after", t.move_after,
      "Policy default: a job within its team's guarantee that finds the free GPUs "
      "scattered moves smaller jobs elsewhere after waiting this long (1m; off: never)");
}

}  // namespace cohort::cli
