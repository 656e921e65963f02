// The searchers (docs/sweeps.md): which values the next trial gets, and what to do with a trial
// when its metric arrives. Pure: no clock, no I/O, no randomness but the seeded stream, so the
// same spec, seed and sequence of calls give the same trials and decisions; State() captures
// everything, and a searcher made from it carries on exactly where the other stopped (a master
// restart mid-sweep, issue 28 item 5).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "common/status.h"
#include "model/json.h"
#include "sweep/sweep_spec.h"

namespace cohort::sweep {

enum class Verdict {
  kContinue,  // keep training
  kStop,      // stopped early: not in the top 1/divisor of its rung (asha)
  kComplete,  // reached the searcher's max_time: end it gracefully, as completed
};

class Searcher {
 public:
  virtual ~Searcher() = default;
  // The values of the next trial (its number is the count made so far + 1), or nullopt once the
  // searcher makes no more (the grid is done, max_trials made).
  virtual std::optional<Json> NextTrial() = 0;
  // A point of the searcher's metric for `trial` at `time` (SearcherSpec's time): what the
  // trial should do now. Points may repeat or arrive out of order; a point at or before one
  // already decided on decides nothing new (kContinue, or the verdict already given).
  virtual Verdict Observe(int trial, double time, double value) = 0;
  // The trial will report nothing more (it ended, however).
  virtual void TrialEnded(int trial) = 0;
  // How many trials NextTrial has made.
  virtual int trials_made() const = 0;
  // Everything needed to carry on; MakeSearcher(spec, &state) restores it.
  virtual Json State() const = 0;
};

// A searcher for `spec.searcher`, fresh, or restored from `state` (what State() returned).
// kInvalidArgument if the state does not fit the spec.
StatusOr<std::unique_ptr<Searcher>> MakeSearcher(const SweepSpec& spec,
                                                 const Json* state = nullptr);

// The first `n` trials a searcher of `spec` would make, without running any (`--dry-run`).
std::vector<Json> PreviewTrials(const SweepSpec& spec, int n);

// asha: the time of each rung, lowest first.
std::vector<double> RungTimes(const SearcherSpec& searcher);

}  // namespace cohort::sweep
