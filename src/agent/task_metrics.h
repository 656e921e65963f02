// One task's training metrics on the agent (docs/observability.md): the cohort-metric lines of
// its output (and its cohort-checkpoint lines, which the agent reports in its syncs), and, for the
// job's rank-0 task, the TensorBoard event files under the job's log directory. Points wait here
// until the master has them.
//
// Bounded: each Collect reads at most kMetricReadPerRound bytes of output (the event reader has
// its own budget), and at most kMaxMetricBacklog points wait; beyond, the oldest are dropped
// and counted. Points that are not finite numbers (JSON cannot carry them, nor SQLite keep them)
// are dropped and counted too.
//
// Used by one thread (the agent's main loop).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "metrics/event_directory_reader.h"
#include "metrics/line_protocol.h"
#include "model/metric.h"

namespace cohort::agent {

inline constexpr int64_t kMetricReadPerRound = int64_t{4} << 20;
inline constexpr size_t kMaxMetricBacklog = 200'000;
// How often the event files are looked for and read: a walk of the log directory every round
// (50 ms) would cost more than it brings. Sooner while the reader says more is waiting.
inline constexpr double kEventPollSeconds = 1.0;

class TaskMetrics {
 public:
  // `output`: the task's output file. `event_dir`: the directory whose event files are the
  // task's to ship (empty: none). `output_from`: where in the output reading starts (what an
  // earlier agent already read). With `skip_existing_events`, event files as they are now are
  // taken as read: an earlier attempt of the job shipped them.
  TaskMetrics(std::string output, std::string event_dir, int64_t output_from,
              bool skip_existing_events);

  // Reads what is new into the backlog; `now` stamps lines without a time. `ended`: the task
  // has ended, so the event files are read now (its directory may go any moment).
  void Collect(double now, bool ended = false);
  // The oldest `n` points waiting, at most.
  std::vector<TaggedPoint> Next(size_t n) const;
  // The master has the oldest `n`.
  void Shipped(size_t n);
  void Discard() { backlog_.clear(); }

  size_t backlog() const { return backlog_.size(); }
  int64_t dropped() const { return dropped_; }
  // How far the output has been read into the backlog, and how far the agent last wrote down
  // as shipped.
  int64_t output_read() const { return output_read_; }
  int64_t output_saved() const { return output_saved_; }
  void set_output_saved(int64_t offset) { output_saved_ = offset; }
  // Problems of the files read (a corrupted record, a bad line) since the last call.
  std::vector<metrics::ReadProblem> TakeProblems();
  // When the newest cohort-checkpoint line read since the last call was read, in seconds since
  // the epoch.
  std::optional<double> TakeCheckpoint() { return std::exchange(checkpoint_read_at_, {}); }
  // The step of the last cohort-checkpoint line read since the last call that gave one.
  std::optional<int64_t> TakeCheckpointStep() { return std::exchange(checkpoint_step_, {}); }

 private:
  void Add(const metrics::MetricBatch& batch);

  std::string output_;
  int64_t output_read_ = 0;
  int64_t output_saved_ = 0;
  metrics::MetricLineReader lines_{"output"};
  std::optional<metrics::EventDirectoryReader> events_;
  double next_event_poll_ = 0;  // seconds since the epoch
  std::deque<TaggedPoint> backlog_;
  int64_t dropped_ = 0;
  std::vector<metrics::ReadProblem> problems_;
  std::optional<double> checkpoint_read_at_;
  std::optional<int64_t> checkpoint_step_;
};

}  // namespace cohort::agent
