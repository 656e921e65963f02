#include "slurm/sbatch_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "common/enum_names.h"
#include "common/strings.h"
#include "common/units.h"
#include "model/json.h"
#include "model/limits.h"
#include "model/spec_fields.h"
#include "slurm/ascii.h"
#include "slurm/filename_pattern.h"
#include "slurm/slurm_job.h"

namespace cohort::slurm {
namespace {

std::string Written(std::string_view option, const GpuRequest& gpus) {
  return fmt::format("--{}={}", option, gpus.ToString());
}

std::string WrittenGres(const GpuRequest& gpus) {
  return gpus.type.empty() ? fmt::format("--gres=gpu:{}", gpus.count)
                           : fmt::format("--gres=gpu:{}:{}", gpus.type, gpus.count);
}

// In Slurm's units, which are binary: 64G, 512M, 0.
std::string WrittenMemory(std::string_view option, int64_t bytes) {
  std::string size = std::to_string(bytes / cohort::kMiB) + "M";
  if (bytes == 0) {
    size = "0";
  } else if (bytes % cohort::kTiB == 0) {
    size = std::to_string(bytes / cohort::kTiB) + "T";
  } else if (bytes % (cohort::kMiB * 1024) == 0) {
    size = std::to_string(bytes / (cohort::kMiB * 1024)) + "G";
  }
  return fmt::format("--{}={}", option, size);
}

// `name` as a Cohort job's name: each character a job name does not take made '-', leading
// ones not a letter or digit dropped, cut to kMaxJobNameLength; "job" if nothing is left.
std::string CohortJobName(std::string_view name) {
  auto alphanumeric = [](char c) { return IsDigit(c) || IsLetter(c); };
  std::string out;
  for (char c : name) {
    if (out.empty() && !alphanumeric(c)) continue;
    out += alphanumeric(c) || c == '.' || c == '_' || c == '-' ? c : '-';
  }
  if (out.size() > kMaxJobNameLength) out.resize(kMaxJobNameLength);
  return out.empty() ? "job" : out;
}

// One GPU option of the job, as written, and the GPUs it gives each node.
struct GpuSource {
  std::string written;  // "--gpus-per-node=a100:4"
  const GpuRequest* request = nullptr;
};

class Converter {
 public:
  Converter(const SbatchOptions& options, const SbatchScriptInfo& script)
      : o_(options), script_(script) {}

  StatusOr<SbatchJob> Run() {
    job_.spec.tasks.resize(1);
    group().role = std::string(kSbatchRole);
    Name();
    Team();
    Priority();
    if (Layout()) {
      gpus_known_ = Gpus();
      cpus_known_ = (gpus_known_ || !o_.cpus_per_gpu) && Cpus();
      Memory();
    }
    TimeLimit();
    Restart();
    Dependencies();
    Array();
    Files();
    WithoutEffect();
    if (!errors_.empty()) {
      std::string message = errors_.size() == 1 ? errors_[0] : Join(errors_, "; ");
      return Status::InvalidArgument(std::move(message), std::move(errors_));
    }
    return std::move(job_);
  }

 private:
  TaskGroupSpec& group() { return job_.spec.tasks[0]; }
  SlurmSettings& slurm() { return job_.slurm; }
  const SlurmSettings& slurm() const { return job_.slurm; }

  void Error(std::string what) { errors_.push_back(std::move(what)); }
  void Warn(std::string what) { job_.warnings.push_back(std::move(what)); }

  // The job's name: --job-name, else the script's (Slurm's default). Slurm's name is kept as
  // written for SLURM_JOB_NAME and %x; the spec's is the same with every character a Cohort
  // name does not take made '-' (and leading ones not a letter or digit dropped), with a
  // warning when they differ.
  void Name() {
    const bool given = o_.job_name && !o_.job_name->empty();
    std::string name = given ? *o_.job_name : script_.name;
    if (name.empty()) name = "sbatch";
    slurm().job_name = name;
    const std::string spec_name = CohortJobName(name);
    job_.spec.name = spec_name;
    if (spec_name != name) {
      Warn(fmt::format(
          "{}: the Cohort job is named \"{}\" (a job name is 1 to {} letters, digits, '.', '_' "
          "or '-', starting with a letter or digit); SLURM_JOB_NAME and %x keep \"{}\"",
          given ? fmt::format("--job-name={}", name)
                : fmt::format("the script's name \"{}\"", name),
          spec_name, kMaxJobNameLength, name));
    }
  }

  // The team: --partition, since a Slurm partition is a Cohort team. Without it the spec names
  // none (names_team false) and keeps JobSpec's default, which the CLI leaves out of the document
  // it submits, for the master to choose the submitter's team, as `cohort run` does.
  void Team() {
    if (!o_.partition) return;
    const std::string& partition = *o_.partition;
    slurm().partition = partition;
    if (partition.find(',') != std::string::npos) {
      return Error(fmt::format(
          "--partition={}: a Cohort job runs in one team; give one partition (a partition is a "
          "Cohort team)",
          partition));
    }
    if (auto problem = IdentifierProblem(Json(partition), "team", kMaxTeamNameLength)) {
      return Error(
          fmt::format("--partition={}: {} (a partition is a Cohort team)", partition, *problem));
    }
    job_.spec.team = partition;
    job_.names_team = true;
  }

  // The priority: --qos low, normal or high (in any case), or an integer from kMinPriority to
  // kMaxPriority; without it, the spec's default (normal).
  void Priority() {
    if (!o_.qos) return;
    slurm().qos = *o_.qos;
    if (auto named = ParsePriorityName(Lowered(*o_.qos))) {
      job_.spec.priority = *named;
    } else if (auto number = ParseInt(*o_.qos, kMinPriority, kMaxPriority)) {
      job_.spec.priority = *number;
    } else {
      Error(fmt::format(
          "--qos={}: not a Cohort priority; give {} or an integer from {} to {} (a QOS is a "
          "priority on Cohort)",
          *o_.qos, NameList(kPriorityNames, ", "), kMinPriority, kMaxPriority));
    }
  }

  // How the option that set the node count reads, for messages.
  std::string NodesText() const {
    if (o_.nodes) return fmt::format("--nodes={}", slurm().nodes);
    return fmt::format("{} node{}", slurm().nodes, slurm().nodes == 1 ? "" : "s");
  }

  // The nodes and the tasks on each (the rules "nodes" and "tasks per node" of sbatch_job.h).
  // False when they cannot be worked out, and so neither can the resources.
  bool Layout() {
    int nodes = 1;
    if (o_.nodes) {
      nodes = o_.nodes->min;
      if (o_.nodes->max > o_.nodes->min) {
        Warn(fmt::format("--nodes={}-{}: Cohort starts the job on the minimum, {} node{}",
                         o_.nodes->min, o_.nodes->max, nodes, nodes == 1 ? "" : "s"));
      }
    } else if (o_.ntasks && o_.ntasks_per_node) {
      nodes = (*o_.ntasks + *o_.ntasks_per_node - 1) / *o_.ntasks_per_node;
    } else if (o_.ntasks && *o_.ntasks > 1) {
      Warn(fmt::format(
          "--ntasks={}: without --nodes, Cohort runs every task on one node (Slurm may spread "
          "them over several); give --nodes to spread them",
          *o_.ntasks));
    }
    if (o_.ntasks && *o_.ntasks < nodes) {
      // Slurm's words: "can't run 2 processes on 4 nodes, setting nnodes to 2".
      Warn(
          fmt::format("--ntasks={}: fewer tasks than --nodes={}; the job runs on {} node{}, as "
                      "in Slurm",
                      *o_.ntasks, nodes, *o_.ntasks, *o_.ntasks == 1 ? "" : "s"));
      nodes = *o_.ntasks;
    }
    if (nodes > cohort::kMaxTasks) {
      Error(fmt::format("{}: a Cohort job has at most {} tasks, here one per node",
                        o_.nodes ? fmt::format("--nodes={}", nodes)
                                 : fmt::format("--ntasks={}", o_.ntasks.value_or(0)),
                        cohort::kMaxTasks));
      return false;
    }
    slurm().nodes = nodes;
    group().replicas = nodes;

    std::vector<int>& per_node = slurm().tasks_per_node;
    if (o_.ntasks) {
      // Slurm's block layout: as even as can be, the first nodes one more.
      const int base = *o_.ntasks / nodes;
      const int extra = *o_.ntasks % nodes;
      for (int i = 0; i < nodes; ++i) per_node.push_back(base + (i < extra ? 1 : 0));
      if (o_.ntasks_per_node && per_node[0] > *o_.ntasks_per_node) {
        Error(fmt::format(
            "--ntasks={}: {} tasks do not fit on {} at --ntasks-per-node={} ({} at most)",
            *o_.ntasks, *o_.ntasks, NodesText(), *o_.ntasks_per_node,
            int64_t{nodes} * *o_.ntasks_per_node));
        return false;
      }
      if (extra > 0) {
        Warn(fmt::format(
            "--ntasks={}: {} tasks per node over {} (as Slurm places them); each node holds "
            "what {} tasks need, since Cohort's tasks of one group are alike",
            *o_.ntasks, CountsPerNode(per_node), NodesText(), per_node[0]));
      }
    } else {
      per_node.assign(nodes, o_.ntasks_per_node.value_or(1));
    }
    slurm().ntasks = std::accumulate(per_node.begin(), per_node.end(), 0);
    slurm().tasks_asked = o_.ntasks || o_.ntasks_per_node;
    slurm().ntasks_per_node = o_.ntasks_per_node;
    return true;
  }

  int MostTasksPerNode() const { return slurm().tasks_per_node[0]; }

  // The GPUs of each node: --gpus-per-node, else --gres=gpu:N, else --gpus-per-task times the
  // tasks per node, else --gpus over the nodes, evenly. Another GPU option given with the one
  // that decides must agree with it, and all must name one type, which is the job's
  // constraints.gpu_model.
  bool Gpus() {
    slurm().asked_gpus = o_.gpus;
    slurm().asked_gpus_per_node = o_.gpus_per_node;
    slurm().asked_gpus_per_task = o_.gpus_per_task;
    if (o_.gpus_per_task) slurm().gpus_per_task = o_.gpus_per_task->count;
    const int nodes = slurm().nodes;
    const int64_t most_tasks = MostTasksPerNode();
    // --gres=none asks for no GPUs by --gres: it decides nothing, as the parse holds it.
    const bool gres = o_.gres_gpus && o_.gres_gpus->count > 0;

    std::vector<GpuSource> given;
    int64_t per_node = 0;
    if (o_.gpus_per_node) {
      per_node = o_.gpus_per_node->count;
      given.push_back({Written("gpus-per-node", *o_.gpus_per_node), &*o_.gpus_per_node});
    } else if (gres) {
      per_node = o_.gres_gpus->count;
      given.push_back({WrittenGres(*o_.gres_gpus), &*o_.gres_gpus});
    }
    if (o_.gpus_per_task) {
      const std::string written = Written("gpus-per-task", *o_.gpus_per_task);
      const int64_t needed = o_.gpus_per_task->count * most_tasks;
      if (given.empty()) {
        per_node = needed;
      } else if (needed > per_node) {
        Error(fmt::format("{}: {} tasks per node need {} GPUs per node; {} gives {}", written,
                          most_tasks, needed, given[0].written, per_node));
        return false;
      }
      given.push_back({written, &*o_.gpus_per_task});
    }
    if (o_.gpus) {
      const std::string written = Written("gpus", *o_.gpus);
      const int64_t total = o_.gpus->count;
      if (given.empty()) {
        if (total % nodes != 0) {
          Error(fmt::format("{}: {} GPUs cannot be spread evenly over {}; use --gpus-per-node",
                            written, total, NodesText()));
          return false;
        }
        per_node = total / nodes;
      } else {
        // What the deciding option gives the job in all, as Slurm counts it.
        const int64_t job_total = o_.gpus_per_node || gres
                                      ? per_node * nodes
                                      : int64_t{o_.gpus_per_task->count} * slurm().ntasks;
        if (total != job_total) {
          Error(fmt::format("{}: {} on {} gives the job {} GPUs, not {}; give one of them", written,
                            given[0].written, NodesText(), job_total, total));
          return false;
        }
      }
      given.push_back({written, &*o_.gpus});
    }
    if (per_node > cohort::kMaxTaskGpus) {
      Error(fmt::format("{}: {} GPUs per node; a Cohort node has at most {}", given[0].written,
                        per_node, cohort::kMaxTaskGpus));
      return false;
    }
    const GpuSource* typed = nullptr;
    for (const GpuSource& source : given) {
      if (source.request->type.empty()) continue;
      if (typed && typed->request->type != source.request->type) {
        Error(fmt::format("{} and {} ask for different GPU types; a Cohort job has one",
                          typed->written, source.written));
        return false;
      }
      if (!typed) typed = &source;
    }
    if (typed) {
      job_.spec.constraints.gpu_model = typed->request->type;
      Warn(fmt::format(
          "{}: the job runs only on nodes whose GPU model, as `cohort nodes` shows it, is \"{}\"",
          typed->written, typed->request->type));
    }
    slurm().gpus_per_node = static_cast<int>(per_node);
    group().resources.gpus = per_node;
    return true;
  }

  // The CPUs of each node: --cpus-per-gpu times its GPUs, else --cpus-per-task (1 if not given)
  // times its tasks; at most kMaxTaskCpus.
  bool Cpus() {
    slurm().cpus_per_task = o_.cpus_per_task;
    slurm().cpus_per_gpu = o_.cpus_per_gpu;
    int64_t cpus = 0;
    std::string written;
    if (o_.cpus_per_gpu) {
      written = fmt::format("--cpus-per-gpu={}", *o_.cpus_per_gpu);
      if (slurm().gpus_per_node == 0) {
        Error(fmt::format("{}: the job asks for no GPUs; use --cpus-per-task", written));
        return false;
      }
      cpus = int64_t{*o_.cpus_per_gpu} * slurm().gpus_per_node;
    } else {
      written = fmt::format("--cpus-per-task={}", o_.cpus_per_task.value_or(1));
      cpus = int64_t{o_.cpus_per_task.value_or(1)} * MostTasksPerNode();
    }
    if (cpus > cohort::kMaxTaskCpus) {
      Error(fmt::format("{}: {} CPUs per node; a Cohort node has at most {}", written, cpus,
                        cohort::kMaxTaskCpus));
      return false;
    }
    slurm().cpus_per_node = static_cast<int>(cpus);
    group().resources.milli_cpus = cpus * 1000;
    return true;
  }

  // The memory of each node: --mem; else --mem-per-cpu times its CPUs; else --mem-per-gpu times
  // its GPUs; else kDefaultMemoryPerNode. 0, Slurm's "all of the node's memory", is refused:
  // Cohort places a job by the memory it asks for. At most kMaxTaskMemoryBytes.
  void Memory() {
    slurm().mem_per_node = o_.mem;
    slurm().mem_per_cpu = o_.mem_per_cpu;
    slurm().mem_per_gpu = o_.mem_per_gpu;
    std::string written;
    int64_t each = kDefaultMemoryPerNode;
    int64_t times = 1;
    std::string_view of;  // what `each` is per: "CPU", "GPU"
    if (o_.mem) {
      written = WrittenMemory("mem", *o_.mem);
      each = *o_.mem;
    } else if (o_.mem_per_cpu) {
      written = WrittenMemory("mem-per-cpu", *o_.mem_per_cpu);
      each = *o_.mem_per_cpu;
      times = slurm().cpus_per_node;
      of = "CPU";
      if (!cpus_known_) return;
    } else if (o_.mem_per_gpu) {
      written = WrittenMemory("mem-per-gpu", *o_.mem_per_gpu);
      each = *o_.mem_per_gpu;
      times = slurm().gpus_per_node;
      of = "GPU";
      if (!gpus_known_) return;
      if (times == 0) {
        return Error(
            fmt::format("{}: the job asks for no GPUs; use --mem or --mem-per-cpu", written));
      }
    }
    if (each == 0) {
      return Error(fmt::format(
          "{}: Slurm's \"all of the node's memory\" is not supported: Cohort places a job by "
          "the memory it asks for; give a size, e.g. --mem=64G",
          written));
    }
    const int64_t most = cohort::kMaxTaskMemoryBytes;
    if (each > most / times) {
      return Error(
          of.empty() ? fmt::format("{}: {} per node; a Cohort node has at most {}", written,
                                   FormatByteSize(each), FormatByteSize(most))
                     : fmt::format("{}: times {} {}s per node, over {}, the most a Cohort node has",
                                   written, times, of, FormatByteSize(most)));
    }
    group().resources.memory_bytes = each * times;
  }

  // The time limit of one attempt: --time; none for UNLIMITED, or without --time.
  void TimeLimit() {
    if (!o_.time || o_.time->unlimited) return;
    job_.spec.max_runtime = o_.time->duration;
    slurm().time_limit = o_.time->duration;
  }

  // Slurm requeues a batch job when its node fails or it is preempted, never on its own failure:
  // restart.on is [node_lost, preempted], with or without --requeue. --no-requeue: no cause,
  // and the one attempt.
  void Restart() {
    RestartPolicy& restart = job_.spec.restart;
    if (o_.requeue == false) {
      restart.on.clear();
      restart.max_attempts = 1;
      return;
    }
    restart.on = {RestartCause::kNodeLost, RestartCause::kPreempted};
  }

  // --dependency, as its parse left it (each job once). Cohort always ends a job whose
  // dependencies can never be met, as --kill-on-invalid-dep=yes.
  void Dependencies() {
    job_.spec.depends_on = o_.dependency.value_or(std::vector<Dependency>{});
    if (o_.kill_on_invalid_dep == false) {
      Warn(
          "--kill-on-invalid-dep=no: ignored: Cohort ends a job whose dependencies can never "
          "be met, saying why");
    }
  }

  // --array: its indices and %N as max_parallel; the step as Slurm reads it from the text (atoi
  // of what follows the first ':').
  void Array() {
    if (!o_.array) return;
    job_.spec.array = *o_.array;
    slurm().array_text = o_.array_text.value_or("");
    const size_t colon = slurm().array_text.find(':');
    if (colon == std::string::npos) return;
    const std::string_view after = std::string_view(slurm().array_text).substr(colon + 1);
    const size_t digits = std::find_if_not(after.begin(), after.end(), IsDigit) - after.begin();
    if (auto step = ParseInt(after.substr(0, digits), 1); step) slurm().array_step = *step;
  }

  // Where the script runs and its files: --chdir (relative to the submit directory), the
  // output's default pattern, and what the SLURM_* variables show.
  void Files() {
    SlurmSettings& s = slurm();
    s.submit_dir = script_.submit_dir;
    s.workdir = script_.submit_dir;
    if (o_.chdir && !o_.chdir->empty()) {
      s.workdir = o_.chdir->starts_with('/') || script_.submit_dir.empty()
                      ? *o_.chdir
                      : fmt::format("{}/{}", script_.submit_dir, *o_.chdir);
    }
    s.output_pattern = o_.output.value_or(DefaultOutputPattern(o_.array.has_value()));
    s.error_pattern = o_.error.value_or("");
    s.input_pattern = o_.input.value_or("");
    s.open_mode = o_.open_mode.value_or(OpenMode::kTruncate);
    s.export_env = o_.export_env.value_or(ExportSpec{});
    s.signal = o_.signal;
    s.account = o_.account.value_or("");
  }

  // Options accepted that change nothing on Cohort, each warned about once. (--account and
  // --mail-* are warned about by the parse, from their rows of the option table.)
  void WithoutEffect() {
    if (o_.exclusive) {
      Warn(fmt::format(
          "--exclusive{}: ignored: a Cohort job holds what it asks for, and other jobs may use "
          "the rest of its nodes",
          o_.exclusive->empty() ? "" : "=" + *o_.exclusive));
    }
    if (o_.constraint) {
      Warn(fmt::format(
          "--constraint={}: ignored: Cohort nodes have no Slurm features; ask for a GPU model "
          "with --gres=gpu:TYPE:N",
          *o_.constraint));
    }
    if (o_.comment)
      Warn(fmt::format("--comment={}: ignored: Cohort keeps no comment", *o_.comment));
    if (o_.signal && o_.signal->reservation_overlap) {
      Warn("--signal=R:...: the R flag is ignored: Cohort has no reservations to overlap");
    }
  }

  const SbatchOptions& o_;
  const SbatchScriptInfo& script_;
  SbatchJob job_;
  std::vector<std::string> errors_;
  // Whether the GPUs and CPUs per node are known: when they are not (an error says why), the
  // memory per node is checked only when it does not depend on them.
  bool gpus_known_ = false;
  bool cpus_known_ = false;
};

}  // namespace

StatusOr<SbatchJob> SbatchToJob(const SbatchOptions& options, const SbatchScriptInfo& script) {
  return Converter(options, script).Run();
}

SlurmJobInfo SlurmJobInfoOf(const SbatchJob& job) {
  SlurmJobInfo info = SlurmJobInfoOf(SlurmSectionOf(job, {}, "", ""), job.spec);
  info.cpus_per_node.assign(info.tasks_per_node.size(), job.slurm.cpus_per_node);
  return info;
}

}  // namespace cohort::slurm
