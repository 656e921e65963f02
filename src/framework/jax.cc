// JAX (docs/job-spec.md, "JAX"): the coordinator's address on a port the master assigned, and
// each process's count and id for jax.distributed.initialize().
#include <fmt/format.h>

#include "framework/frameworks.h"

namespace cohort::framework {

void AddJax(const Job& job, const Task& self, std::map<std::string, std::string>& env) {
  std::vector<const Task*> tasks = ActiveTasks(job);
  // jax.distributed.initialize() reads the address itself; the count and id are for its call.
  env["JAX_COORDINATOR_ADDRESS"] = fmt::format("{}:{}", tasks.front()->host, tasks.front()->port);
  env["JAX_PROCESS_COUNT"] = std::to_string(tasks.size());
  env["JAX_PROCESS_ID"] = std::to_string(self.rank);
}

}  // namespace cohort::framework
