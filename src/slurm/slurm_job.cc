#include "slurm/slurm_job.h"

#include <utility>

namespace cohort::slurm {

SlurmSection SlurmSectionOf(const SbatchJob& job, const SbatchScriptInfo& script,
                            std::string script_text, std::string submit_host) {
  const SlurmSettings& s = job.slurm;
  SlurmSection out;
  out.script = std::move(script_text);
  out.script_name = script.path;
  out.args = script.args;
  out.job_name = s.job_name;
  out.tasks_per_node = s.tasks_per_node;
  out.tasks_asked = s.tasks_asked;
  out.ntasks_per_node = s.ntasks_per_node;
  out.cpus_per_task = s.cpus_per_task;
  out.cpus_per_gpu = s.cpus_per_gpu;
  if (s.asked_gpus) out.gpus = s.asked_gpus->ToString();
  if (s.asked_gpus_per_node) out.gpus_per_node = s.asked_gpus_per_node->ToString();
  if (s.asked_gpus_per_task) out.gpus_per_task = s.asked_gpus_per_task->ToString();
  out.mem_per_node = s.mem_per_node;
  out.mem_per_cpu = s.mem_per_cpu;
  out.mem_per_gpu = s.mem_per_gpu;
  out.submit_dir = s.submit_dir;
  out.submit_host = std::move(submit_host);
  out.partition = s.partition;
  out.account = s.account;
  out.qos = s.qos;
  out.array_step = s.array_step;
  out.output = s.output_pattern;
  out.error = s.error_pattern;
  out.input = s.input_pattern;
  out.append = s.open_mode == OpenMode::kAppend;
  if (s.signal) {
    out.signal = SlurmSignal{.number = s.signal->number,
                             .before_end = s.signal->before_end,
                             .batch_only = s.signal->batch_shell_only};
  }
  return out;
}

JobSpec SlurmJobSpec(const SbatchJob& job, SlurmSection section,
                     const std::map<std::string, std::string>& submit_env) {
  JobSpec spec = job.spec;
  spec.framework = Framework::kSlurm;
  for (auto& group : spec.tasks) {
    group.command.clear();
    group.distinct_nodes = true;  // a node of the allocation is a machine
    group.workdir = job.slurm.workdir;
    for (const ExportVariable& v : job.slurm.export_env.variables) {
      if (v.value) {
        group.env[v.name] = *v.value;
      } else if (auto it = submit_env.find(v.name); it != submit_env.end()) {
        group.env[v.name] = it->second;
      }
    }
  }
  spec.slurm = std::move(section);
  return spec;
}

SlurmJobInfo SlurmJobInfoOf(const SlurmSection& s, const JobSpec& spec) {
  SlurmJobInfo info;
  info.job_name = s.job_name;
  info.tasks_per_node = s.tasks_per_node;
  info.tasks_asked = s.tasks_asked;
  info.ntasks_per_node = s.ntasks_per_node;
  info.cpus_per_task = s.cpus_per_task;
  info.cpus_per_gpu = s.cpus_per_gpu;
  info.gpus = s.gpus;
  info.gpus_per_node = s.gpus_per_node;
  info.gpus_per_task = s.gpus_per_task;
  info.mem_per_node = s.mem_per_node;
  info.mem_per_cpu = s.mem_per_cpu;
  info.mem_per_gpu = s.mem_per_gpu;
  info.submit_dir = s.submit_dir;
  info.submit_host = s.submit_host;
  info.partition = s.partition;
  info.cluster_name = "cohort";
  if (!s.account.empty()) info.account = s.account;
  if (!s.qos.empty()) info.qos = s.qos;
  info.time_limit = spec.max_runtime;
  if (spec.array && !spec.array->indices.empty()) {
    info.array = SlurmArrayInfo{.count = static_cast<int>(spec.array->indices.size()),
                                .min = spec.array->indices.front(),
                                .max = spec.array->indices.back(),
                                .step = s.array_step};
  }
  return info;
}

}  // namespace cohort::slurm
