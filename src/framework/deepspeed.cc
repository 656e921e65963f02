// DeepSpeed (docs/job-spec.md, "DeepSpeed"): its hostfile, and the variables its launcher gives
// each process, so that a task may run the training script directly (one process per task) or
// `deepspeed --no_ssh` with the hostfile and its node rank, with no ssh between tasks.
#include <fmt/format.h>

#include <algorithm>

#include "framework/frameworks.h"

namespace cohort::framework {

std::string DeepSpeedHostfile(const Job& job) {
  std::string out;
  for (const Task* t : ActiveTasks(job)) {
    out += fmt::format("{}-{} slots={}\n", t->role, t->index, std::max<size_t>(1, t->gpus.size()));
  }
  return out;
}

void AddDeepSpeed(const Job& job, const Task& self, std::map<std::string, std::string>& env) {
  std::vector<const Task*> tasks = ActiveTasks(job);
  const Task& first = *tasks.front();
  int local_rank = 0;
  int local_size = 0;
  int cross_rank = 0;  // this node's place among the job's nodes, in rank order
  std::vector<std::string> nodes;
  for (const Task* t : tasks) {
    if (std::find(nodes.begin(), nodes.end(), t->node_id) == nodes.end()) {
      nodes.push_back(t->node_id);
    }
    if (t->node_id == self.node_id) {
      if (t->rank < self.rank) ++local_rank;
      ++local_size;
    }
  }
  cross_rank =
      static_cast<int>(std::find(nodes.begin(), nodes.end(), self.node_id) - nodes.begin());
  env["MASTER_ADDR"] = first.host;
  env["MASTER_PORT"] = std::to_string(first.port);
  env["WORLD_SIZE"] = std::to_string(tasks.size());
  env["RANK"] = std::to_string(self.rank);
  env["LOCAL_RANK"] = std::to_string(local_rank);
  env["LOCAL_SIZE"] = std::to_string(local_size);
  env["CROSS_RANK"] = std::to_string(cross_rank);
  env["CROSS_SIZE"] = std::to_string(nodes.size());
  // `deepspeed --no_ssh --node_rank $NODE_RANK`: this task's line of the hostfile.
  env["NODE_RANK"] = std::to_string(self.rank);
}

}  // namespace cohort::framework
