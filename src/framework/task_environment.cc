#include "framework/task_environment.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "common/strings.h"

namespace cohort::framework {
namespace {

std::string Endpoint(const Task& t) { return fmt::format("{}:{}", t.host, t.port); }

void AddPyTorch(const Job& job, const Task& self, std::map<std::string, std::string>& env) {
  const Task* rank0 = nullptr;
  int local_rank = 0;
  int local_world = 0;
  int world = 0;
  for (const auto& t : job.tasks) {
    if (t.scaled_down) continue;
    ++world;
    if (t.rank == 0) rank0 = &t;
    if (t.node_id == self.node_id) {
      if (t.rank < self.rank) ++local_rank;
      ++local_world;
    }
  }
  COHORT_CHECK(rank0 != nullptr);
  env["MASTER_ADDR"] = rank0->host;
  env["MASTER_PORT"] = std::to_string(rank0->port);
  env["WORLD_SIZE"] = std::to_string(world);
  if (job.spec.elastic()) {
    // torchrun reads its options from PET_* variables: with these, `torchrun train.py` joins
    // the job's rendezvous and follows its size as replicas come and go.
    int min = 0, max = 0;
    for (const auto& g : job.spec.tasks) {
      min += g.replicas;
      max += std::max(g.replicas, g.max_replicas);
    }
    env["PET_NNODES"] = fmt::format("{}:{}", min, max);
    env["PET_RDZV_BACKEND"] = "c10d";
    env["PET_RDZV_ENDPOINT"] = Endpoint(*rank0);
    env["PET_RDZV_ID"] = fmt::format("cohort-{}-{}", job.id, job.attempt);
    // A std::string, not a literal: at -O3 GCC 12 reports a false -Wrestrict on assigning "1".
    env["PET_NPROC_PER_NODE"] = std::string("1");
  }
  env["RANK"] = std::to_string(self.rank);
  env["LOCAL_RANK"] = std::to_string(local_rank);
  env["LOCAL_WORLD_SIZE"] = std::to_string(local_world);
}

void AddTensorFlow(const Job& job, const Task& self, std::map<std::string, std::string>& env) {
  nlohmann::json cluster = nlohmann::json::object();
  for (const auto& t : job.tasks) {  // rank order, so each role's list is in index order
    if (!t.scaled_down) cluster[t.role].push_back(Endpoint(t));
  }
  nlohmann::json config = {{"cluster", cluster},
                           {"task", {{"type", self.role}, {"index", self.index}}}};
  env["TF_CONFIG"] = config.dump();
}

}  // namespace

std::map<std::string, std::string> TaskEnvironment(const Job& job, size_t task,
                                                   const JobDirectories& dirs) {
  COHORT_CHECK(task < job.tasks.size());
  const Task& self = job.tasks[task];
  std::map<std::string, std::string> env;
  for (const auto& group : job.spec.tasks) {
    if (group.role == self.role) env = group.env;
  }

  std::vector<std::string> hosts;
  int active = 0;
  for (const auto& t : job.tasks) {
    if (t.scaled_down) continue;
    hosts.push_back(t.host);
    ++active;
  }
  std::vector<std::string> gpus;
  for (int g : self.gpus) gpus.push_back(std::to_string(g));

  env["COHORT_JOB_ID"] = std::to_string(job.id);
  env["COHORT_JOB_NAME"] = job.spec.name;
  env["COHORT_ATTEMPT"] = std::to_string(job.attempt);
  env["COHORT_TASK_ROLE"] = self.role;
  env["COHORT_TASK_INDEX"] = std::to_string(self.index);
  env["COHORT_TASK_RANK"] = std::to_string(self.rank);
  env["COHORT_NUM_TASKS"] = std::to_string(active);
  for (const auto& g : job.spec.tasks) {
    if (g.role != self.role || !g.elastic()) continue;
    env["COHORT_MIN_REPLICAS"] = std::to_string(g.replicas);
    env["COHORT_MAX_REPLICAS"] = std::to_string(g.max_replicas);
  }
  env["COHORT_TASK_PORT"] = std::to_string(self.port);
  env["COHORT_NODE"] = self.node_id;
  env["COHORT_HOSTS"] = Join(hosts, ",");
  env["COHORT_CHECKPOINT_DIR"] = dirs.checkpoint_dir;
  env["COHORT_OUTPUT_DIR"] = dirs.output_dir;
  env["COHORT_LOG_DIR"] = dirs.log_dir;
  // NVML numbers GPUs in PCI bus order; CUDA must count the same way for indices to agree.
  env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  env["CUDA_VISIBLE_DEVICES"] = Join(gpus, ",");

  if (job.trial) {
    for (auto& [name, value] : TrialEnvironment(*job.trial)) env[name] = std::move(value);
  }
  if (job.array) {
    env["COHORT_ARRAY_ID"] = std::to_string(job.array->id);
    env["COHORT_ARRAY_INDEX"] = std::to_string(job.array->index);
    env["COHORT_ARRAY_COUNT"] = std::to_string(job.array->count);
  }

  switch (job.spec.framework) {
    case Framework::kNone:
      break;
    case Framework::kPyTorch:
      AddPyTorch(job, self, env);
      break;
    case Framework::kTensorFlow:
      AddTensorFlow(job, self, env);
      break;
  }
  return env;
}

int64_t EnvironmentBytesBound(const JobSpec& spec, const std::vector<Task>& tasks,
                              const JobDirectories& dirs) {
  // The names of every variable, the numbers, a role, a node id, 64 GPUs and the rank 0 task's
  // endpoint twice (PyTorch): each is bounded (model/limits.h), and together under 4 KiB.
  constexpr int64_t kOwn = 4 * 1024;
  int64_t hosts = 0;      // COHORT_HOSTS: each host and a comma
  int64_t endpoints = 0;  // TF_CONFIG: each "host:port", and each role's "role":[]
  for (const auto& t : tasks) {
    if (t.scaled_down) continue;
    hosts += static_cast<int64_t>(t.host.size()) + 1;
    endpoints += static_cast<int64_t>(t.host.size()) + 9;
  }
  int64_t bytes = kOwn + hosts +
                  static_cast<int64_t>(spec.name.size() + dirs.checkpoint_dir.size() +
                                       dirs.output_dir.size() + dirs.log_dir.size());
  if (spec.framework == Framework::kTensorFlow) {
    bytes += endpoints + 64;
    for (const auto& g : spec.tasks) bytes += static_cast<int64_t>(g.role.size()) + 6;
  }
  return bytes;
}

}  // namespace cohort::framework
