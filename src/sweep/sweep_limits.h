// The bounds on a sweep spec (docs/sweeps.md, "Limits"). A sweep is a few dozen trials of a few
// hyperparameters; these are far above that, and low enough that reading a spec or a searcher's
// state holds the master's event loop for milliseconds at most (docs/sweeps.md, "Limits"). The
// text itself is bounded as a job spec's is (model/limits.h, kMaxSpecBytes).
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/spec_fields.h"

namespace cohort::sweep {

// Trials of one sweep in all, and at once.
inline constexpr int kMaxTrials = 1000;
inline constexpr int kMaxConcurrentTrials = 100;

// A sweep's name with "-<trial>" appended is its trials' job name, which must fit.
inline constexpr size_t kMaxSweepNameLength = kMaxJobNameLength - 5;  // "-1000"

// The space: leaves in all, parts of a dotted name, choices of a categorical, bytes of a string
// value (each value becomes a COHORT_HP_ variable of every trial).
inline constexpr size_t kMaxHyperParameters = 64;
inline constexpr int kMaxHParamDepth = 4;
inline constexpr size_t kMaxCategoricalVals = 256;
inline constexpr size_t kMaxHParamTextBytes = 1024;
// Integer ranges and seeds stay within what a double holds exactly, so that the values and the
// seed read back the same from any JSON reader (a browser's included).
inline constexpr int64_t kMaxHParamInt = (int64_t{1} << 53) - 1;
inline constexpr uint64_t kMaxSeed = (uint64_t{1} << 53) - 1;
// The magnitude of a double range's ends and of a log range's exponents' results.
inline constexpr double kMaxHParamMagnitude = 1e300;

// The points of a grid (the product of its axes' counts).
inline constexpr int64_t kMaxGridSize = 10'000;

// asha.
inline constexpr int kMaxRungs = 10;
inline constexpr int kMinDivisor = 2;
inline constexpr int kMaxDivisor = 100;
inline constexpr double kMaxTime = 1e15;

// A metric's name, as the cohort-metric line protocol allows a tag (docs/observability.md).
inline constexpr size_t kMaxMetricNameLength = 256;

}  // namespace cohort::sweep
