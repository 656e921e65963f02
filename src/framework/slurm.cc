// A Slurm batch job (docs/slurm.md): one task per node of the allocation, each serving srun's
// steps through its exec service with the batch script's SLURM_* variables; the first runs the
// script besides, through `cohort-exec batch`, which sends its output to --output's file.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/strings.h"
#include "framework/frameworks.h"
#include "slurm/filename_pattern.h"
#include "slurm/slurm_environment.h"
#include "slurm/slurm_job.h"

namespace cohort::framework {
namespace {

const SlurmSection& SectionOf(const Job& job) {
  COHORT_CHECK(job.spec.slurm.has_value());
  return *job.spec.slurm;
}

slurm::SlurmJobInfo JobInfo(const Job& job, const std::vector<const Task*>& tasks) {
  const SlurmSection& s = SectionOf(job);
  slurm::SlurmJobInfo info = slurm::SlurmJobInfoOf(s, job.spec);
  info.job_id = job.id;
  if (info.job_name.empty()) info.job_name = job.spec.name;
  if (info.array && job.array) {
    info.array->array_job_id = job.array->id;
    info.array->task_id = job.array->index;
    info.array->count = job.array->count;
  }
  info.nodes = SlurmNodeNames(job);
  info.tasks_per_node.resize(tasks.size(), 1);
  for (const Task* t : tasks) {
    info.cpus_per_node.push_back(
        std::max<int>(1, static_cast<int>(t->resources.milli_cpus / 1000)));
  }
  info.start_time = job.placed_at;
  return info;
}

// A file of the batch script (--output, --error, --input) as Slurm names it.
std::string BatchFile(const Job& job, const std::string& pattern, const std::string& node) {
  const SlurmSection& s = SectionOf(job);
  slurm::FilenameFields fields;
  fields.job_id = job.id;
  if (job.array) {
    fields.array_job_id = job.array->id;
    fields.array_task_id = job.array->index;
  }
  fields.job_name = s.job_name.empty() ? job.spec.name : s.job_name;
  fields.user = job.user;
  fields.node_name = node;
  fields.restart_count = std::max(0, job.attempt - 1);
  // Relative to where the script runs, as in Slurm.
  for (const auto& g : job.spec.tasks) fields.work_dir = g.workdir;
  return slurm::ExpandFilenamePattern(pattern, fields);
}

}  // namespace

std::vector<std::string> SlurmNodeNames(const Job& job) {
  std::vector<std::string> hosts;
  std::vector<std::string> ids;
  for (const Task* t : ActiveTasks(job)) {
    hosts.push_back(t->host);
    ids.push_back(t->node_id);
  }
  // Scripts reach other nodes by these names (MASTER_ADDR from `scontrol show hostnames`): the
  // nodes' addresses, unless two nodes share one (agents on one machine), where only their ids
  // tell them apart.
  const std::set<std::string> distinct(hosts.begin(), hosts.end());
  return distinct.size() == hosts.size() ? hosts : ids;
}

std::string SlurmExecEndpoints(const Job& job) {
  const std::vector<const Task*> tasks = ActiveTasks(job);
  const std::vector<std::string> names = SlurmNodeNames(job);
  std::vector<std::string> endpoints;
  for (size_t i = 0; i < tasks.size(); ++i) {
    endpoints.push_back(fmt::format("{}={}:{}", names[i], tasks[i]->host, tasks[i]->port));
  }
  return Join(endpoints, ",");
}

void AddSlurm(const Job& job, const Task& self, std::map<std::string, std::string>& env) {
  const std::vector<const Task*> tasks = ActiveTasks(job);
  const auto it = std::find(tasks.begin(), tasks.end(), &self);
  COHORT_CHECK(it != tasks.end());
  const int node_index = static_cast<int>(it - tasks.begin());
  const slurm::SlurmJobInfo info = JobInfo(job, tasks);
  slurm::SlurmBatchPlace place;
  place.node_index = node_index;
  place.gpus_on_node = static_cast<int>(self.gpus.size());
  if (!self.gpus.empty()) place.cuda_visible_devices = env["CUDA_VISIBLE_DEVICES"];
  for (auto& [name, value] : slurm::BatchScriptEnvironment(info, place)) env[name] = value;
  env["COHORT_EXEC_ENDPOINTS"] = SlurmExecEndpoints(job);
  if (node_index != 0) return;

  // What `cohort-exec batch` reads to run the script as sbatch would.
  const SlurmSection& s = SectionOf(job);
  const std::string& node = info.nodes[0];
  env["COHORT_SLURM_OUTPUT"] = BatchFile(job, s.output, node);
  if (!s.error.empty()) env["COHORT_SLURM_ERROR"] = BatchFile(job, s.error, node);
  if (!s.input.empty()) env["COHORT_SLURM_INPUT"] = BatchFile(job, s.input, node);
  env["COHORT_SLURM_OPEN_MODE"] = s.append ? "append" : "truncate";
  if (s.signal && job.spec.max_runtime) {
    // Slurm sends it this long before the time limit, which Cohort counts from the placement.
    auto at = std::chrono::duration_cast<std::chrono::seconds>(*job.spec.max_runtime -
                                                               s.signal->before_end);
    env["COHORT_SLURM_SIGNAL"] = fmt::format("{}{}@{}", s.signal->batch_only ? "B:" : "",
                                             s.signal->number, std::max<int64_t>(0, at.count()));
  }
}

std::string SlurmScript(const Job& job) { return SectionOf(job).script; }

std::vector<std::string> SlurmBatchCommand(const Job& job) {
  std::vector<std::string> command = {"cohort-exec", "batch", "--"};
  const auto& args = SectionOf(job).args;
  command.insert(command.end(), args.begin(), args.end());
  return command;
}

}  // namespace cohort::framework
