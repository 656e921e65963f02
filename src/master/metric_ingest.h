// Training metrics on their way in and out (docs/observability.md): agents' batches are written
// to the metric store on a thread of its own, so that the event loop never waits for the disk on
// their account; charts are read on the caller's thread (a bounded number of rows each).
//
// The queue is bounded: past kMaxQueuedPoints a batch is refused with kUnavailable, and the
// agent keeps it and sends it again later.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "os/worker_thread.h"
#include "state/metric_store.h"

namespace cohort::master {

inline constexpr size_t kMaxQueuedPoints = 1'000'000;

class MetricIngest {
 public:
  using Done = std::function<void(StatusOr<state::MetricAppendResult>)>;
  using Post = std::function<void(std::function<void()>)>;

  explicit MetricIngest(std::unique_ptr<state::MetricStore> store) : store_(std::move(store)) {}
  ~MetricIngest();

  // From now on batches are written on the ingest's own thread, and `post` brings each answer
  // back to the caller's thread. Before, they are written at once, on the caller's thread.
  void StartWriter(Post post);
  void AppendAsync(JobId job, std::string task, std::vector<state::TaggedPoint> points, Done done);

  state::MetricStore& store() { return *store_; }

 private:
  // On the writer's thread: the batch written, then its answer posted back.
  void Write(JobId job, const std::string& task, const std::vector<state::TaggedPoint>& points,
             Done& done);

  std::unique_ptr<state::MetricStore> store_;
  Post post_;
  std::mutex mu_;  // guards queued_points_
  size_t queued_points_ = 0;
  // Last: stopped first, while what its work uses is still there. A stop writes what is queued:
  // those batches were accepted.
  std::unique_ptr<WorkerThread> writer_;
};

}  // namespace cohort::master
