// The task logs that agents ship and users read: the one owner of their files, so that nobody
// else builds paths or lists directories. A task's log is the byte stream of its output, with
// absolute offsets from the task's first byte; agents append to it (idempotently, by offset)
// and followers are woken when it grows.
//
// Each log is capped: it is stored in segments, and once the stored bytes exceed the limit the
// oldest segments are deleted, so that what is kept is the most recent output. Offsets never
// change: bytes that were dropped (rotated away, or skipped by an agent that fell behind) are a
// gap before or between segments, which a reader is told about (DroppedMarker) and steps over.
// Everything, the dropped count included, follows from the files, so it survives a restart.
//
// Layout: <dir>/<job>/<attempt>/<role>.<index>/<start>.log, one file per segment named by the
// offset of its first byte (20 digits), and an `end` file once the task's final size is known
// (roles never contain dots). A log of an older master, <role>.<index>.log, becomes the segment
// at offset 0 when first touched.
//
// Threading: every call runs on the master's one event-loop thread, except the work of
// AppendAsync once StartWriter has been called: that runs on the store's own writer thread, so
// that the event loop never waits for the disk (a write, above all an fdatasync, can take
// 100 ms while something else floods the disk). The writer works on a copy of the log's index
// and puts it back when its files are written; readers take the lock only to look at the index.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/subscribers.h"
#include "model/job.h"
#include "os/worker_thread.h"

namespace cohort::master {

inline constexpr int64_t kDefaultLogLimit = int64_t{256} << 20;

struct LogLimits {
  int64_t per_task = kDefaultLogLimit;  // stored bytes kept per task, at most
  int64_t segment = int64_t{32} << 20;  // the unit of rotation

  // A limit with segments of an eighth of it (at most 32 MiB): what is kept after a rotation
  // stays within an eighth of the limit.
  static LogLimits For(int64_t per_task);
};

// What one task's log holds.
struct LogInfo {
  int64_t size = 0;    // every byte the task wrote that reached the master, dropped or not
  int64_t stored = 0;  // the bytes kept
  // The task's whole output is this long (its agent said so once it ended); unset while it runs,
  // or if no agent has said. The log is complete once `size` reaches it.
  std::optional<int64_t> end;

  int64_t dropped() const { return size - stored; }
  bool complete() const { return end && size >= *end; }
};

// A piece of a log read from some offset: first `dropped` bytes that are no longer stored, then
// `data`, all from one segment; the next read starts at `next`.
struct LogChunk {
  int64_t dropped = 0;
  std::string data;
  int64_t next = 0;
  int64_t size = 0;  // the log's size when read: `next < size` means there is more
};

// What an upload adds besides its bytes.
struct LogAppend {
  // The agent no longer has the bytes between what is stored and the upload's offset (it fell
  // behind by more than the limit and skipped ahead): they are recorded as dropped.
  bool skip = false;
  std::optional<int64_t> end;  // the task has ended and its output is this long
};

// "[cohort: 1.2GiB of earlier output dropped (log limit 256MiB)]", without a newline.
std::string DroppedMarker(int64_t dropped, int64_t limit);

class LogStore {
 public:
  using SubscriptionId = Subscribers<JobId>::Id;
  using AppendDone = std::function<void(StatusOr<int64_t>)>;
  // Runs work on the event loop's thread.
  using Post = std::function<void(std::function<void()>)>;

  // `dir` is created on the first append if it does not exist.
  explicit LogStore(std::string dir, LogLimits limits = {});
  ~LogStore();
  LogStore(const LogStore&) = delete;
  LogStore& operator=(const LogStore&) = delete;

  // From now on AppendAsync appends on a thread of the store's own, and `post` brings each
  // result back to the event loop. Call once.
  void StartWriter(Post post);
  // Finishes the append under way and joins the writer; appends still queued are dropped
  // (their `done` never runs). Then AppendAsync appends at once again.
  void StopWriter();

  // Stores `data` as the bytes of the task's log from `offset` on, and returns the log's size.
  // Idempotent: bytes it already holds (or has dropped) are skipped, so a resend after a lost
  // answer is harmless. The bytes are on disk (fdatasync, and the directory entry of a new
  // segment) before it returns, then old segments beyond the limit are deleted and the job's
  // subscribers are called if the log changed.
  // kFailedPrecondition if `offset` is past the end without `skip`; the message names the size
  // to resend from. kInvalidArgument for a negative offset or end. kInternal for any failed file
  // operation; bytes of a failed append may be partly stored, which a retry from the same
  // offset repairs.
  // Not while a writer runs (it would race with it).
  StatusOr<int64_t> Append(const TaskId& task, int64_t offset, std::string_view data,
                           const LogAppend& options = {});
  // Append, on the writer thread if there is one: the job's subscribers, then `done` with what
  // Append returns, run on the event loop once the bytes are on disk. Without a writer, all of
  // it happens before AppendAsync returns.
  void AppendAsync(const TaskId& task, int64_t offset, std::string data, LogAppend options,
                   AppendDone done);

  // The log's size; 0 for a task without a log. kInternal if it cannot be read.
  StatusOr<int64_t> Size(const TaskId& task) const;
  StatusOr<LogInfo> Info(const TaskId& task) const;

  // Up to `max_bytes` of the log from `offset` on, from one segment: whatever was dropped from
  // `offset` on is stepped over and counted. Empty at or past the end, or for a task without a
  // log. kInvalidArgument for a negative offset; kInternal for a failed read.
  StatusOr<LogChunk> Read(const TaskId& task, int64_t offset, size_t max_bytes) const;

  // The tasks of one attempt that have a log, sorted by role, then index.
  StatusOr<std::vector<TaskId>> TasksWithLogs(JobId job, int attempt) const;

  const LogLimits& limits() const { return limits_; }

  // `callback` runs after every append that adds bytes to a log of `job` (any attempt), on the
  // caller's thread and before Append returns, so it should only schedule work. It may
  // unsubscribe itself or others.
  SubscriptionId Subscribe(JobId job, std::function<void()> callback);
  void Unsubscribe(SubscriptionId id);

 private:
  struct Segment {
    int64_t start = 0;
    int64_t length = 0;
  };
  // One log as its files say, kept in memory once read (the store is their only writer).
  struct TaskLog {
    std::vector<Segment> segments;  // by start; never empty once the log has bytes
    std::optional<int64_t> end;
    int64_t size() const;
    int64_t stored() const;
  };

  std::string DirOf(const TaskId& task) const;
  std::string SegmentPath(const TaskId& task, int64_t start) const;
  // A copy of the log's index, from the cache or from its files.
  StatusOr<TaskLog> Index(const TaskId& task) const;
  // The log from the cache, or from its files. Requires mu_.
  StatusOr<TaskLog*> LoadLocked(const TaskId& task) const;
  void Forget(const TaskId& task) const;  // the files are the truth again
  // Append without waking anyone; `changed` is set if the log changed.
  StatusOr<int64_t> AppendNow(const TaskId& task, int64_t offset, std::string_view data,
                              const LogAppend& options, bool& changed);
  // Writes `data` at the end of the log, filling the last segment and starting new ones.
  Status Write(const TaskId& task, TaskLog& log, int64_t offset, std::string_view data);
  Status WriteEnd(const TaskId& task, TaskLog& log, int64_t end);
  // Takes the oldest segments out of the index while more than the limit is stored; returns
  // their starts, for their files to be deleted once the index no longer names them.
  std::vector<int64_t> Rotate(TaskLog& log) const;
  // On the writer's thread: the append, then its answer posted to the event loop.
  void WriteQueued(const TaskId& task, int64_t offset, const std::string& data,
                   const LogAppend& options, AppendDone& done);

  const std::string dir_;
  const LogLimits limits_;
  mutable std::mutex mu_;  // guards cache_
  mutable std::map<TaskId, TaskLog> cache_;
  Subscribers<JobId> subscribers_;  // the event loop's only

  Post post_;
  std::unique_ptr<WorkerThread> writer_;  // appends that agents ship, once StartWriter ran
};

}  // namespace cohort::master
