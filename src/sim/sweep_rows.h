// Sweep rows of a Cohort CSV trace (docs/simulator.md, "Sweeps"): one row stands for a
// hyperparameter sweep of many trials, submitted a few at a time, most stopped early at an ASHA
// rung (docs/sweeps.md). What a trial does is drawn here; the replay (simulator.h) submits them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace cohort::sim {

// The `sweep` column: "trials=200;concurrency=16;divisor=3;rungs=4;stop=0.5/0.6/0.67". The row's
// duration is a trial's full length (its time at max_time), its gpus a trial's GPUs.
struct SweepShape {
  int trials = 0;       // required
  int concurrency = 4;  // trials at once, as max_concurrent_trials
  int divisor = 4;      // ASHA's
  int rungs = 5;        // ASHA's max_rungs; 1: no early stopping (grid, random)
  // The share of the trials reaching rung i (0-based, below the last) that stop there; one value
  // per rung but the last, where every trial completes. Default: 1 - 1/divisor, what ASHA stops
  // in expectation.
  std::vector<double> stop;
  bool operator==(const SweepShape&) const = default;
};

// Parses the column; errors name the key and the reason ("sweep: concurrency must be ...").
StatusOr<SweepShape> ParseSweepShape(std::string_view text);
// The column for `shape`, which ParseSweepShape reads back to the same shape.
std::string FormatSweepShape(const SweepShape& shape);

// What a trial runs on average: the rungs' lengths weighed by the shares that stop there.
double ExpectedTrialLength(const SweepShape& shape, double full_length);

// One trial as the replay runs it.
struct TrialDraw {
  int rung = 0;       // where it stops; rungs - 1: it completes
  double length = 0;  // seconds of work: full / divisor^(rungs - 1 - rung)
};

// Each trial's rung, in trial order, from its own stream: `seed` and the sweep's id, so that a
// sweep's trials do not depend on the other rows or on what the scheduler does.
std::vector<TrialDraw> DrawTrials(const SweepShape& shape, double full_length,
                                  std::string_view sweep_id, uint64_t seed);

}  // namespace cohort::sim
