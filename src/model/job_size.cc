#include "model/job_size.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/units.h"
#include "model/limits.h"

namespace cohort {

int64_t TaskTextBytes(const TaskGroupSpec& group, int64_t secret_value_bytes) {
  int64_t bytes = static_cast<int64_t>(group.workdir.size()) + secret_value_bytes;
  for (const auto& arg : group.command) bytes += static_cast<int64_t>(arg.size());
  for (const auto& [name, value] : group.env) {
    bytes += static_cast<int64_t>(name.size() + value.size());
  }
  for (const auto& [name, secret] : group.env_secrets) bytes += static_cast<int64_t>(name.size());
  return bytes;
}

std::vector<std::string> JobSizeProblems(const JobSpec& spec,
                                         const std::vector<int64_t>& secret_value_bytes) {
  std::vector<std::string> problems;
  const std::string limit =
      fmt::format("over the {} limit of a job's tasks' text (docs/job-spec.md, \"Limits\")",
                  FormatByteSize(kMaxJobTaskTextBytes));
  int64_t total = 0;
  int64_t tasks = 0;
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const TaskGroupSpec& g = spec.tasks[i];
    int64_t replicas = std::max(g.replicas, g.max_replicas);
    int64_t per_task = TaskTextBytes(g, i < secret_value_bytes.size() ? secret_value_bytes[i] : 0);
    int64_t bytes = replicas * per_task;
    total += bytes;
    tasks += replicas;
    if (bytes > kMaxJobTaskTextBytes) {
      problems.push_back(fmt::format(
          "tasks[{}]: {} replicas × {} of command, env and workdir each is {}, {}", i, replicas,
          FormatByteSizeApprox(per_task), FormatByteSizeApprox(bytes), limit));
    }
  }
  if (problems.empty() && total > kMaxJobTaskTextBytes) {
    problems.push_back(
        fmt::format("tasks: the command, env and workdir of each of the {} tasks add up to {}, {}",
                    tasks, FormatByteSizeApprox(total), limit));
  }
  return problems;
}

}  // namespace cohort
