// Usage reports computed off the event loop. A report reads every task hold and job milestone in
// its range: over 90 days of 100,000 jobs that is half a million rows and a third of a second
// (bench/usage_bench.cc), far too long to hold the loop that serves every agent and user. So the
// master hands reports to a thread of their own, reading through a connection of its own to the
// state database (SQLite in WAL mode lets it read while the master writes), and the answer comes
// back on the event loop.
#pragma once

#include <functional>
#include <memory>
#include <mutex>

#include "common/status.h"
#include "master/usage_report.h"
#include "os/worker_thread.h"
#include "state/state_store.h"

namespace cohort::master {

// Reports computing or waiting at once; one more is refused (kUnavailable, 503) rather than
// queued without end.
inline constexpr size_t kMaxUsageReports = 4;

// The report over `store`, as of `now`.
StatusOr<UsageReport> ComputeUsage(state::StateStore& store, const UsageQuery& query,
                                   Timestamp now);

class UsageReader {
 public:
  // Runs work on the event loop.
  using Post = std::function<void(std::function<void()>)>;
  using Done = std::function<void(StatusOr<UsageReport>)>;

  // `store` is read only on the reader's thread, and only through the scans.
  UsageReader(std::unique_ptr<state::StateStore> store, Post post);
  // Finishes the report under way and joins the thread; queued reports are dropped (their
  // `done` never runs).
  ~UsageReader();
  UsageReader(const UsageReader&) = delete;
  UsageReader& operator=(const UsageReader&) = delete;

  // Computes the report on the reader's thread; `done` runs on the event loop. With
  // kMaxUsageReports already queued, `done` gets kUnavailable at once.
  void Submit(UsageQuery query, Timestamp now, Done done);

 private:
  struct Request {
    UsageQuery query;
    Timestamp now;
    Done done;
  };
  // On the reader's thread: the report, then its answer posted back.
  void Compute(Request& request);

  std::unique_ptr<state::StateStore> store_;
  Post post_;
  std::mutex mu_;    // guards busy_
  size_t busy_ = 0;  // queued or being computed
  // Last: it starts once the rest is set up, and stops first. A stop drops what is queued: the
  // master is going away, and nobody waits for those answers.
  WorkerThread thread_{WorkerThread::AtStop::kDropQueued};
};

}  // namespace cohort::master
