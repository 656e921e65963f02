// Task logs shipped by agents: only a task of the job may write, and the log store keeps them
// (durable, idempotent, capped, followers woken).
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "master/job_book.h"
#include "master/master.h"

namespace cohort::master {

Status JobBook::CheckTask(const TaskId& task) const {
  auto job_it = jobs_.find(task.job);
  if (job_it == jobs_.end()) {
    return Status::NotFound(fmt::format("job {} does not exist", task.job));
  }
  if (task.attempt < 1 || task.attempt > job_it->second.attempt) {
    return Status::NotFound(fmt::format("job {} has no attempt {}", task.job, task.attempt));
  }
  // The id names a file and a series: it must be one of the job's tasks, nothing else.
  // (Elastic replicas get ever higher indices: any index of an elastic role will do.)
  bool known = std::any_of(job_it->second.spec.tasks.begin(), job_it->second.spec.tasks.end(),
                           [&](const TaskGroupSpec& g) {
                             return g.role == task.role && task.index >= 0 &&
                                    (task.index < g.replicas || g.elastic());
                           });
  if (!known) {
    return Status::NotFound(
        fmt::format("job {} has no task {}/{}", task.job, task.role, task.index));
  }
  return Status::Ok();
}

void Master::AppendLog(const std::string& node_id, const TaskId& task, int64_t offset,
                       std::string data, const LogAppend& options, LogStore::AppendDone done) {
  if (Status s = jobs_.CheckTask(task); !s.ok()) return done(s);
  (void)node_id;
  logs_.AppendAsync(task, offset, std::move(data), options, std::move(done));
}

StatusOr<int64_t> Master::AppendLog(const std::string& node_id, const TaskId& task, int64_t offset,
                                    std::string_view data, const LogAppend& options) {
  std::optional<StatusOr<int64_t>> result;
  AppendLog(node_id, task, offset, std::string(data), options,
            [&](StatusOr<int64_t> size) { result = std::move(size); });
  COHORT_CHECK(result.has_value());  // no writer thread runs
  return std::move(*result);
}

}  // namespace cohort::master
