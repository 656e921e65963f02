// Task logs shipped by agents: only a task of the job may write, and the log store keeps them
// (durable, idempotent, capped, followers woken).
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "master/job_book.h"
#include "master/master.h"

namespace cohort::master {

void Master::AppendLog(const std::string& node_id, const TaskId& task, int64_t offset,
                       std::string data, const LogAppend& options, LogStore::AppendDone done) {
  if (Status s = jobs_.CheckTask(task, node_id); !s.ok()) return done(s);
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
