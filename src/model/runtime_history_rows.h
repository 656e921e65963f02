// What the master keeps of scheduler::RuntimeHistory in its state store: one row per key at every
// level of the history, and the change that recording one ended job makes to them. Here, between
// the scheduler that computes them and the store that keeps them, so that neither depends on the
// other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cohort {

struct RuntimeHistoryRow {
  std::string key;  // as the history prints it, e.g. "t=vision|g=8"
  int64_t samples = 0;
  double mean_seconds = 0;  // GPU-seconds
  // The history's counter when the row last changed: past the cap on keys, the rows least
  // recently changed go first.
  int64_t last_used = 0;
  bool operator==(const RuntimeHistoryRow&) const = default;
};

// One ended job recorded: the rows it changed or added (one per level), and the rows to forget,
// every row with last_used below `forget_before` (0: none), written after `rows`.
struct RuntimeHistoryChange {
  std::vector<RuntimeHistoryRow> rows;
  int64_t forget_before = 0;
  bool empty() const { return rows.empty() && forget_before == 0; }
};

}  // namespace cohort
