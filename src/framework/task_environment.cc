#include "framework/task_environment.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "common/strings.h"
#include "framework/frameworks.h"

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
    // Rank 0 hosts the rendezvous on its own port (no guessing from host names, which two tasks
    // on one machine share); a gang's replicas start together, so 5 s is enough for all of them
    // to join where torchrun would wait 30 s for more (docs/job-spec.md, "Environment").
    env["PET_RDZV_CONF"] =
        fmt::format("is_host={},last_call_timeout=5", self.rank == rank0->rank ? 1 : 0);
    // Debian 12's torchrun (torch 1.13 on Python 3.11) cannot read its default "0" for these
    // (iterating an IntFlag no longer yields its zero member) and fails before the workers
    // start; stderr into its log file and onto the console again reads as "2" on every version,
    // and leaves stdout alone. A command-line --redirects or --tee wins.
    env["PET_REDIRECTS"] = std::string("2");
    env["PET_TEE"] = std::string("2");
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

std::vector<const Task*> ActiveTasks(const Job& job) {
  std::vector<const Task*> out;
  for (const auto& t : job.tasks) {
    if (!t.scaled_down) out.push_back(&t);
  }
  COHORT_CHECK(!out.empty());
  return out;
}

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
    case Framework::kMpi:
      AddMpi(job, self, env);
      break;
    case Framework::kJax:
      AddJax(job, self, env);
      break;
    case Framework::kDeepSpeed:
      AddDeepSpeed(job, self, env);
      break;
    case Framework::kSlurm:
      AddSlurm(job, self, env);
      break;
  }
  return env;
}

std::vector<TaskFile> TaskFiles(const Job& job, size_t task) {
  COHORT_CHECK(task < job.tasks.size());
  switch (job.spec.framework) {
    case Framework::kMpi:
      return {TaskFile{
          "mpi-hostfile", MpiHostfile(job),
          job.tasks[task].role == "launcher"
              ? std::vector<std::string>{"COHORT_MPI_HOSTFILE", "OMPI_MCA_orte_default_hostfile"}
              : std::vector<std::string>{"COHORT_MPI_HOSTFILE"}}};
    case Framework::kDeepSpeed:
      return {
          TaskFile{"deepspeed-hostfile", DeepSpeedHostfile(job), {"COHORT_DEEPSPEED_HOSTFILE"}}};
    case Framework::kSlurm:
      if (ActiveTasks(job).front() != &job.tasks[task]) break;
      return {TaskFile{"slurm-script", SlurmScript(job), {"COHORT_SLURM_SCRIPT"}}};
    case Framework::kNone:
    case Framework::kPyTorch:
    case Framework::kTensorFlow:
    case Framework::kJax:
      break;
  }
  return {};
}

TaskTools TaskToolsOf(const Job& job, size_t task) {
  COHORT_CHECK(task < job.tasks.size());
  if (job.spec.session) return TaskTools{.terminal = job.spec.session->kind == SessionKind::kShell};
  if (job.spec.framework == Framework::kSlurm) {
    return TaskTools{.tools = true, .slurm_tools = true, .exec_service = true};
  }
  if (job.spec.framework != Framework::kMpi) return {};
  return TaskTools{.tools = true, .exec_service = job.tasks[task].role == "worker"};
}

std::vector<std::string> TaskCommand(const Job& job, size_t task) {
  COHORT_CHECK(task < job.tasks.size());
  const Task& self = job.tasks[task];
  if (job.spec.framework == Framework::kSlurm) {
    if (ActiveTasks(job).front() == &self) return SlurmBatchCommand(job);
    return {};
  }
  if (job.spec.session && job.spec.session->kind == SessionKind::kNotebook) {
    return NotebookCommand(job, self);
  }
  for (const auto& g : job.spec.tasks) {
    if (g.role == self.role) return g.command;
  }
  return {};
}

bool UsesJobCredential(const JobSpec& spec) {
  return spec.framework == Framework::kMpi || spec.framework == Framework::kSlurm ||
         spec.session.has_value();
}

std::optional<std::string> SuccessEndsJob(const Job& job, const Task& task) {
  switch (job.spec.framework) {
    case Framework::kMpi:
      // The job is its mpirun. Its workers only hold the ranks, which have ended with it.
      if (task.role == "launcher") return "the launcher succeeded; stopping the workers";
      break;
    case Framework::kSlurm:
      // The job is its batch script; the other nodes only serve its steps.
      if (ActiveTasks(job).front() == &task) {
        return "the batch script succeeded; stopping the job's other nodes";
      }
      break;
    case Framework::kNone:
    case Framework::kPyTorch:
    case Framework::kTensorFlow:
    case Framework::kJax:
    case Framework::kDeepSpeed:
      break;
  }
  return std::nullopt;
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
  if (spec.framework == Framework::kSlurm && spec.slurm) {
    // The batch script and its arguments (slurm/slurm_environment.h: about 2 KiB of names and
    // numbers, and the file names of --output, --error and --input, each at most a path expanded
    // to twice its length), the node list in SLURM_JOB_NODELIST and SLURM_NODELIST, and an
    // endpoint per node ("name=host:port,": name and host are each a host or a node id).
    bytes += static_cast<int64_t>(spec.slurm->script.size()) + 4 * 1024;
    for (const auto& arg : spec.slurm->args) bytes += static_cast<int64_t>(arg.size()) + 1;
    bytes += 2 * static_cast<int64_t>(spec.slurm->output.size() + spec.slurm->error.size() +
                                      spec.slurm->input.size()) +
             3 * 64;
    bytes += static_cast<int64_t>(spec.slurm->job_name.size() + spec.slurm->submit_dir.size() +
                                  spec.slurm->submit_host.size());
    for (const auto& t : tasks) {
      if (t.scaled_down) continue;
      const int64_t name = std::max<int64_t>(static_cast<int64_t>(t.host.size()),
                                             static_cast<int64_t>(t.node_id.size()));
      bytes += 3 * name + static_cast<int64_t>(t.host.size()) + 16;
    }
  }
  if (spec.framework == Framework::kMpi || spec.framework == Framework::kDeepSpeed) {
    // A hostfile line per task ("[cohort-jobID-]ROLE-INDEX slots=N\n": an index and N of at
    // most 5 digits) and, for MPI, an endpoint per worker in COHORT_EXEC_ENDPOINTS
    // ("cohort-jobID-ROLE-INDEX=host:port,"), with the file's and its variables' names.
    bytes += 64;
    for (const auto& t : tasks) {
      if (t.scaled_down) continue;
      const auto role = static_cast<int64_t>(t.role.size());
      bytes += role + 20;
      if (spec.framework == Framework::kMpi) {
        // "cohort-job" and a job id of up to 19 digits, before the line and the endpoint.
        bytes += 2 * 30 + role + 13 + static_cast<int64_t>(t.host.size()) + 8;
      }
    }
  }
  return bytes;
}

}  // namespace cohort::framework
