// The task logs that agents ship and users read: the one owner of their files, so that nobody
// else builds paths or lists directories. A task's log is the byte stream of its output; agents
// append to it (idempotently, by offset) and followers are woken when it grows.
//
// Layout: <dir>/<job>/<attempt>/<role>.<index>.log (roles never contain dots).
// Threading: not thread-safe; like the master, every call runs on its one event-loop thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/subscribers.h"
#include "model/job.h"

namespace cohort::master {

class LogStore {
 public:
  using SubscriptionId = Subscribers<JobId>::Id;

  // `dir` is created on the first append if it does not exist.
  explicit LogStore(std::string dir);

  // Stores `data` as the bytes of the task's log from `offset` on, and returns the log's size.
  // Idempotent: bytes it already holds are skipped (a resend after a lost answer is harmless).
  // The bytes are on disk (fdatasync, and the directory entry of a new file) before it returns,
  // then the job's subscribers are called if the log grew.
  // kFailedPrecondition if `offset` is past the end; the message names the size to resend from.
  // kInvalidArgument for a negative offset. kInternal for any failed file operation; bytes of a
  // failed append may be partly stored, which a retry from the same offset repairs.
  StatusOr<int64_t> Append(const TaskId& task, int64_t offset, std::string_view data);

  // The number of bytes stored; 0 for a task without a log. kInternal if it cannot be read.
  StatusOr<int64_t> Size(const TaskId& task) const;

  // Up to `max_bytes` of the log from `offset` on; empty at or past the end, or for a task
  // without a log. kInvalidArgument for a negative offset; kInternal for a failed read.
  StatusOr<std::string> Read(const TaskId& task, int64_t offset, size_t max_bytes) const;

  // The tasks of one attempt that have a log, sorted by role, then index.
  StatusOr<std::vector<TaskId>> TasksWithLogs(JobId job, int attempt) const;

  // `callback` runs after every append that adds bytes to a log of `job` (any attempt), on the
  // caller's thread and before Append returns, so it should only schedule work. It may
  // unsubscribe itself or others.
  SubscriptionId Subscribe(JobId job, std::function<void()> callback);
  void Unsubscribe(SubscriptionId id);

 private:
  std::string PathOf(const TaskId& task) const;

  std::string dir_;
  Subscribers<JobId> subscribers_;
};

}  // namespace cohort::master
