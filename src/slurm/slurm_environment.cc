#include "slurm/slurm_environment.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "common/status.h"
#include "common/strings.h"
#include "slurm/hostlist.h"

namespace cohort::slurm {
namespace {

using Environment = std::map<std::string, std::string>;

int Sum(const std::vector<int>& counts) { return std::accumulate(counts.begin(), counts.end(), 0); }

std::string MiB(int64_t bytes) { return std::to_string(bytes >> 20); }

void CheckJob(const SlurmJobInfo& job) {
  COHORT_CHECK(!job.nodes.empty());
  COHORT_CHECK(job.tasks_per_node.size() == job.nodes.size());
  COHORT_CHECK(job.cpus_per_node.size() == job.nodes.size());
}

// Where one process runs, whichever kind it is.
struct Process {
  const std::string& node;
  int node_id;  // in the batch script, the job's node; in a step, the step's
  int procid;
  int localid;
  int cpus_on_node;
  int gpus_on_node;
  const std::optional<std::string>& cuda_visible_devices;
};

// What the job gives every process of it.
Environment JobVariables(const SlurmJobInfo& job) {
  Environment env;
  const std::string id = std::to_string(job.job_id);
  const std::string nodelist = CompressHostlist(job.nodes);
  const std::string num_nodes = std::to_string(job.nodes.size());
  env["SLURM_JOB_ID"] = id;
  env["SLURM_JOBID"] = id;  // the old name, which scripts still read
  env["SLURM_JOB_NAME"] = job.job_name;
  env["SLURM_JOB_NODELIST"] = nodelist;
  env["SLURM_NODELIST"] = nodelist;
  env["SLURM_JOB_NUM_NODES"] = num_nodes;
  env["SLURM_NNODES"] = num_nodes;
  env["SLURM_TASKS_PER_NODE"] = CountsPerNode(job.tasks_per_node);
  env["SLURM_JOB_CPUS_PER_NODE"] = CountsPerNode(job.cpus_per_node);
  if (job.tasks_asked) {
    env["SLURM_NTASKS"] = std::to_string(Sum(job.tasks_per_node));
    env["SLURM_NPROCS"] = env["SLURM_NTASKS"];
  }
  if (job.ntasks_per_node) env["SLURM_NTASKS_PER_NODE"] = std::to_string(*job.ntasks_per_node);
  if (job.cpus_per_task) env["SLURM_CPUS_PER_TASK"] = std::to_string(*job.cpus_per_task);
  if (job.cpus_per_gpu) env["SLURM_CPUS_PER_GPU"] = std::to_string(*job.cpus_per_gpu);
  if (job.gpus) env["SLURM_GPUS"] = *job.gpus;
  if (job.gpus_per_node) env["SLURM_GPUS_PER_NODE"] = *job.gpus_per_node;
  if (job.gpus_per_task) env["SLURM_GPUS_PER_TASK"] = *job.gpus_per_task;
  if (job.mem_per_node) env["SLURM_MEM_PER_NODE"] = MiB(*job.mem_per_node);
  if (job.mem_per_cpu) env["SLURM_MEM_PER_CPU"] = MiB(*job.mem_per_cpu);
  if (job.mem_per_gpu) env["SLURM_MEM_PER_GPU"] = MiB(*job.mem_per_gpu);
  if (job.array) {
    env["SLURM_ARRAY_JOB_ID"] = std::to_string(job.array->array_job_id);
    env["SLURM_ARRAY_TASK_ID"] = std::to_string(job.array->task_id);
    env["SLURM_ARRAY_TASK_COUNT"] = std::to_string(job.array->count);
    env["SLURM_ARRAY_TASK_MIN"] = std::to_string(job.array->min);
    env["SLURM_ARRAY_TASK_MAX"] = std::to_string(job.array->max);
    env["SLURM_ARRAY_TASK_STEP"] = std::to_string(job.array->step);
  }
  env["SLURM_SUBMIT_DIR"] = job.submit_dir;
  env["SLURM_SUBMIT_HOST"] = job.submit_host;
  if (!job.partition.empty()) env["SLURM_JOB_PARTITION"] = job.partition;
  env["SLURM_CLUSTER_NAME"] = job.cluster_name;
  if (job.account) env["SLURM_JOB_ACCOUNT"] = *job.account;
  if (job.qos) env["SLURM_JOB_QOS"] = *job.qos;
  if (job.start_time) {
    const auto start =
        std::chrono::duration_cast<std::chrono::seconds>(job.start_time->time_since_epoch());
    env["SLURM_JOB_START_TIME"] = std::to_string(start.count());
    if (job.time_limit) {
      const auto limit = std::chrono::duration_cast<std::chrono::seconds>(*job.time_limit);
      env["SLURM_JOB_END_TIME"] = std::to_string((start + limit).count());
    }
  }
  return env;
}

void AddProcess(const Process& p, Environment& env) {
  env["SLURMD_NODENAME"] = p.node;
  env["SLURM_NODEID"] = std::to_string(p.node_id);
  env["SLURM_PROCID"] = std::to_string(p.procid);
  env["SLURM_LOCALID"] = std::to_string(p.localid);
  env["SLURM_CPUS_ON_NODE"] = std::to_string(p.cpus_on_node);
  // Slurm's GPU plugin leaves it out where a process has no GPU.
  if (p.gpus_on_node > 0) env["SLURM_GPUS_ON_NODE"] = std::to_string(p.gpus_on_node);
  if (p.cuda_visible_devices) env["CUDA_VISIBLE_DEVICES"] = *p.cuda_visible_devices;
}

}  // namespace

std::string CountsPerNode(const std::vector<int>& counts) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < counts.size();) {
    size_t same = i + 1;
    while (same < counts.size() && counts[same] == counts[i]) ++same;
    parts.push_back(same - i == 1 ? std::to_string(counts[i])
                                  : fmt::format("{}(x{})", counts[i], same - i));
    i = same;
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

Environment BatchScriptEnvironment(const SlurmJobInfo& job, const SlurmBatchPlace& place) {
  CheckJob(job);
  COHORT_CHECK(place.node_index >= 0 && static_cast<size_t>(place.node_index) < job.nodes.size());
  Environment env = JobVariables(job);
  env["ENVIRONMENT"] = "BATCH";  // Slurm's mark of a batch script
  // The batch script is the one task of the job's "batch" step.
  AddProcess({job.nodes[place.node_index], place.node_index, 0, 0,
              job.cpus_per_node[place.node_index], place.gpus_on_node, place.cuda_visible_devices},
             env);
  return env;
}

Environment StepVariables(const SlurmStepTask& task, int cpus_on_node) {
  COHORT_CHECK(!task.nodes.empty() && task.tasks_per_node.size() == task.nodes.size());
  COHORT_CHECK(task.node_index >= 0 && static_cast<size_t>(task.node_index) < task.nodes.size());
  COHORT_CHECK(task.procid >= 0 && task.procid < Sum(task.tasks_per_node));
  COHORT_CHECK(task.localid >= 0 && task.localid < task.tasks_per_node[task.node_index]);
  Environment env;
  const std::string step_id = std::to_string(task.step_id);
  const std::string nodelist = CompressHostlist(task.nodes);
  const std::string num_nodes = std::to_string(task.nodes.size());
  const std::string num_tasks = std::to_string(Sum(task.tasks_per_node));
  const std::string tasks_per_node = CountsPerNode(task.tasks_per_node);
  env["SLURM_STEP_ID"] = step_id;
  env["SLURM_STEPID"] = step_id;
  env["SLURM_STEP_NODELIST"] = nodelist;
  env["SLURM_NODELIST"] = nodelist;
  env["SLURM_STEP_NUM_NODES"] = num_nodes;
  env["SLURM_NNODES"] = num_nodes;
  env["SLURM_STEP_NUM_TASKS"] = num_tasks;
  env["SLURM_NTASKS"] = num_tasks;
  env["SLURM_NPROCS"] = num_tasks;
  env["SLURM_STEP_TASKS_PER_NODE"] = tasks_per_node;
  env["SLURM_TASKS_PER_NODE"] = tasks_per_node;
  AddProcess({task.nodes[task.node_index], task.node_index, task.procid, task.localid, cpus_on_node,
              task.gpus_on_node, task.cuda_visible_devices},
             env);
  return env;
}

Environment StepTaskEnvironment(const SlurmJobInfo& job, const SlurmStepTask& task) {
  CheckJob(job);
  COHORT_CHECK(task.node_index >= 0 && static_cast<size_t>(task.node_index) < task.nodes.size());
  const std::string& node = task.nodes[task.node_index];
  const auto in_job = std::find(job.nodes.begin(), job.nodes.end(), node);
  COHORT_CHECK(in_job != job.nodes.end());
  Environment env = JobVariables(job);
  for (auto& [name, value] : StepVariables(task, job.cpus_per_node[in_job - job.nodes.begin()])) {
    env[name] = std::move(value);
  }
  return env;
}

StatusOr<std::vector<int>> ParseCountsPerNode(std::string_view text) {
  std::vector<int> counts;
  for (const std::string& part : Split(text, ',')) {
    int count = 0;
    int64_t times = 1;
    size_t open = part.find("(x");
    std::string number = open == std::string::npos ? part : part.substr(0, open);
    auto value = ParseInteger(number, 0, 65536);
    if (open != std::string::npos) {
      auto repeat = part.back() == ')' ? ParseInteger(part.substr(open + 2, part.size() - open - 3),
                                                      1, static_cast<int64_t>(kMaxHostlistNames))
                                       : std::nullopt;
      if (!repeat) value.reset();
      times = repeat.value_or(0);
    }
    if (!value) {
      return Status::InvalidArgument(
          fmt::format("\"{}\" is not a count per node (e.g. 2(x3),1)", part));
    }
    count = static_cast<int>(*value);
    if (counts.size() + static_cast<size_t>(times) > kMaxHostlistNames) {
      return Status::InvalidArgument(
          fmt::format("more than {} counts per node", kMaxHostlistNames));
    }
    counts.insert(counts.end(), static_cast<size_t>(times), count);
  }
  if (counts.empty()) return Status::InvalidArgument("no count per node");
  return counts;
}

}  // namespace cohort::slurm
