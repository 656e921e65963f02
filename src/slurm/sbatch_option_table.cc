#include "slurm/sbatch_option_table.h"

#include <fmt/format.h>

#include <algorithm>

namespace cohort::slurm {
namespace {

using A = OptionArgument;
using H = OptionHandling;
using Options = SbatchOptions;

// Bounds on counts: far beyond any real job, so that a typo is caught rather than obeyed.
constexpr int kMaxTasks = 1 << 20;
constexpr int kMaxPerNode = 1 << 16;

template <std::optional<std::string> Options::*Field>
Status Text(std::string_view value, Options& o) {
  o.*Field = std::string(value);
  return Status::Ok();
}

template <std::optional<int> Options::*Field, int Max>
Status Count(std::string_view value, Options& o) {
  COHORT_ASSIGN_OR_RETURN(o.*Field, ParsePositiveCount(value, Max));
  return Status::Ok();
}

template <std::optional<GpuRequest> Options::*Field>
Status Gpus(std::string_view value, Options& o) {
  COHORT_ASSIGN_OR_RETURN(o.*Field, ParseGpuRequest(value));
  return Status::Ok();
}

template <std::optional<int64_t> Options::*Field>
Status Memory(std::string_view value, Options& o) {
  COHORT_ASSIGN_OR_RETURN(o.*Field, ParseMemorySize(value));
  return Status::Ok();
}

template <bool Options::*Field>
Status Flag(std::string_view, Options& o) {
  o.*Field = true;
  return Status::Ok();
}

Status Array(std::string_view value, Options& o) {
  ArraySpec array;
  auto indices = ParseArrayIndices(value, "indices", &array.max_parallel);
  if (!indices.ok()) return indices.status();
  array.indices = std::move(*indices);
  o.array = std::move(array);
  o.array_text = std::string(value);
  return Status::Ok();
}

Status Gres(std::string_view value, Options& o) {
  COHORT_ASSIGN_OR_RETURN(auto gpus, ParseGres(value));
  o.gres_gpus = gpus.value_or(GpuRequest{"", 0});
  return Status::Ok();
}

Status Exclusive(std::string_view value, Options& o) {
  if (value != "" && value != "user" && value != "mcs" && value != "topo") {
    return Status::InvalidArgument(
        fmt::format("\"{}\": give user, mcs or topo, or no value", value));
  }
  o.exclusive = std::string(value);
  return Status::Ok();
}

Status Requeue(std::string_view value, Options& o) {
  if (value != "" && value != "expedite") {
    return Status::InvalidArgument(fmt::format("\"{}\": the only value is expedite", value));
  }
  o.requeue = true;
  return Status::Ok();
}

// Every option of sbatch(1), by long name.
constexpr SbatchOptionSpec
    kTable
        [] =
            {
                {"account", 'A', A::kRequired, H::kApply, Text<&Options::account>,
                 "kept to be shown (SLURM_JOB_ACCOUNT); Cohort accounts by team"},
                {"acctg-freq", 0, A::kRequired, H::kIgnore, nullptr, "Cohort samples usage itself"},
                {"array", 'a', A::kRequired, H::kApply, Array, ""},
                {"batch", 0, A::kRequired, H::kUnsupported, nullptr,
                 "Cohort runs the script on the job's first node"},
                {"bb", 0, A::kRequired, H::kUnsupported, nullptr, "Cohort has no burst buffers"},
                {"bbf", 0, A::kRequired, H::kUnsupported, nullptr, "Cohort has no burst buffers"},
                {"begin", 'b', A::kRequired, H::kUnsupported, nullptr,
                 "Cohort starts a job as soon as it can; it takes no start time"},
                {"chdir", 'D', A::kRequired, H::kApply, Text<&Options::chdir>, ""},
                {"cluster-constraint", 0, A::kRequired, H::kUnsupported, nullptr,
                 "Cohort is one cluster"},
                {"clusters", 'M', A::kRequired, H::kUnsupported, nullptr, "Cohort is one cluster"},
                {"comment", 0, A::kRequired, H::kApply, Text<&Options::comment>, ""},
                {"consolidate-segments", 0, A::kNone, H::kIgnore, nullptr,
                 "Cohort places nodes itself"},
                {"constraint", 'C', A::kRequired, H::kApply, Text<&Options::constraint>, ""},
                {"container", 0, A::kRequired, H::kUnsupported, nullptr,
                 "Cohort runs no OCI bundles from sbatch"},
                {"container-id", 0, A::kRequired, H::kUnsupported, nullptr,
                 "Cohort runs no OCI bundles from sbatch"},
                {"contiguous", 0, A::kNone, H::kIgnore, nullptr, "Cohort places nodes itself"},
                {"core-spec", 'S', A::kRequired, H::kIgnore, nullptr, "Cohort reserves no cores"},
                {"cores-per-socket", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort does not place by socket or core"},
                {"cpu-freq", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort does not set CPU frequencies"},
                {"cpus-per-gpu", 0, A::kRequired, H::kApply,
                 Count<&Options::cpus_per_gpu, kMaxPerNode>, ""},
                {"cpus-per-task", 'c', A::kRequired, H::kApply,
                 Count<&Options::cpus_per_task, kMaxPerNode>, ""},
                {"deadline", 0, A::kRequired, H::kUnsupported, nullptr, "Cohort has no deadlines"},
                {"delay-boot", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort does not reboot nodes"},
                {"dependency", 'd', A::kRequired, H::kApply,
                 [](std::string_view v, Options& o) -> Status {
                   COHORT_ASSIGN_OR_RETURN(o.dependency, ParseDependencyList(v));
                   return Status::Ok();
                 },
                 ""},
                {"distribution", 'm', A::kRequired, H::kIgnore, nullptr,
                 "Cohort places tasks itself"},
                {"error", 'e', A::kRequired, H::kApply, Text<&Options::error>, ""},
                {"exclude", 'x', A::kRequired, H::kUnsupported, nullptr,
                 "Cohort chooses the nodes itself"},
                {"exclusive", 0, A::kOptional, H::kApply, Exclusive, ""},
                {"export", 0, A::kRequired, H::kApply,
                 [](std::string_view v, Options& o) -> Status {
                   COHORT_ASSIGN_OR_RETURN(o.export_env, ParseExportSpec(v));
                   return Status::Ok();
                 },
                 ""},
                {"export-file", 0, A::kRequired, H::kUnsupported, nullptr,
                 "Cohort reads no environment file; use --export"},
                {"extra", 0, A::kRequired, H::kIgnore, nullptr, "Cohort keeps no extra node data"},
                {"extra-node-info", 'B', A::kRequired, H::kIgnore, nullptr,
                 "Cohort does not place by socket, core or thread"},
                {"get-user-env", 0, A::kOptional, H::kIgnore, nullptr,
                 "the job's environment is what --export gives it"},
                {"gid", 0, A::kRequired, H::kUnsupported, nullptr,
                 "a job runs as the user who submits it"},
                {"gpu-bind", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort gives each task its own GPUs (CUDA_VISIBLE_DEVICES)"},
                {"gpu-freq", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort does not set GPU clocks"},
                {"gpus", 'G', A::kRequired, H::kApply, Gpus<&Options::gpus>, ""},
                {"gpus-per-node", 0, A::kRequired, H::kApply, Gpus<&Options::gpus_per_node>, ""},
                {"gpus-per-socket", 0, A::kRequired, H::kUnsupported, nullptr,
                 "Cohort does not place GPUs by socket; use --gpus-per-node"},
                {"gpus-per-task", 0, A::kRequired, H::kApply, Gpus<&Options::gpus_per_task>, ""},
                {"gres", 0, A::kRequired, H::kApply, Gres, ""},
                {"gres-flags", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort binds GPUs to tasks itself"},
                {"help", 'h', A::kNone, H::kUnsupported, nullptr, "not a job option"},
                {"hint", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort does not place by core or thread"},
                {"hold", 'H', A::kNone, H::kUnsupported, nullptr,
                 "Cohort does not hold submitted jobs"},
                {"ignore-pbs", 0, A::kNone, H::kIgnore, nullptr, "Cohort reads no #PBS lines"},
                {"input", 'i', A::kRequired, H::kApply, Text<&Options::input>, ""},
                {"job-name", 'J', A::kRequired, H::kApply, Text<&Options::job_name>, ""},
                {"kill-on-invalid-dep", 0, A::kRequired, H::kApply,
                 [](std::string_view v, Options& o) -> Status {
                   COHORT_ASSIGN_OR_RETURN(o.kill_on_invalid_dep, ParseYesNo(v));
                   return Status::Ok();
                 },
                 ""},
                {"licenses", 'L', A::kRequired, H::kUnsupported, nullptr, "Cohort has no licenses"},
                {"mail-type", 0, A::kRequired, H::kApply, Text<&Options::mail_type>,
                 "ignored: Cohort sends no mail"},
                {"mail-user", 0, A::kRequired, H::kApply, Text<&Options::mail_user>,
                 "ignored: Cohort sends no mail"},
                {"mcs-label", 0, A::kRequired, H::kIgnore, nullptr, "Cohort has no MCS labels"},
                {"mem", 0, A::kRequired, H::kApply, Memory<&Options::mem>, ""},
                {"mem-bind", 0, A::kRequired, H::kIgnore, nullptr, "Cohort does not bind memory"},
                {"mem-per-cpu", 0, A::kRequired, H::kApply, Memory<&Options::mem_per_cpu>, ""},
                {"mem-per-gpu", 0, A::kRequired, H::kApply, Memory<&Options::mem_per_gpu>, ""},
                {"mem-update", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort does not lower a job's memory limit"},
                {"mincpus", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort places by the tasks' CPU requests (-c)"},
                {"network", 0, A::kRequired, H::kIgnore, nullptr, "Cohort has no network options"},
                {"nice", 0, A::kOptional, H::kIgnore, nullptr,
                 "Cohort orders jobs by its own policy"},
                {"no-kill", 'k', A::kOptional, H::kIgnore, nullptr,
                 "Cohort handles lost nodes itself"},
                {"no-requeue", 0, A::kNone, H::kApply,
                 [](std::string_view, Options& o) -> Status {
                   o.requeue = false;
                   return Status::Ok();
                 },
                 ""},
                {"nodefile", 'F', A::kRequired, H::kUnsupported, nullptr,
                 "Cohort chooses the nodes itself"},
                {"nodelist", 'w', A::kRequired, H::kUnsupported, nullptr,
                 "Cohort chooses the nodes itself"},
                {"nodes", 'N', A::kRequired, H::kApply,
                 [](std::string_view v, Options& o) -> Status {
                   COHORT_ASSIGN_OR_RETURN(o.nodes, ParseNodeRange(v));
                   return Status::Ok();
                 },
                 ""},
                {"ntasks", 'n', A::kRequired, H::kApply, Count<&Options::ntasks, kMaxTasks>, ""},
                {"ntasks-per-core", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort does not place by core"},
                {"ntasks-per-gpu", 0, A::kRequired, H::kUnsupported, nullptr,
                 "give --ntasks and --gpus-per-task"},
                {"ntasks-per-node", 0, A::kRequired, H::kApply,
                 Count<&Options::ntasks_per_node, kMaxPerNode>, ""},
                {"ntasks-per-socket", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort does not place by socket"},
                {"oom-kill-step", 0, A::kOptional, H::kIgnore, nullptr,
                 "Cohort applies each task's memory limit itself"},
                {"open-mode", 0, A::kRequired, H::kApply,
                 [](std::string_view v, Options& o) -> Status {
                   COHORT_ASSIGN_OR_RETURN(o.open_mode, ParseOpenMode(v));
                   return Status::Ok();
                 },
                 ""},
                {"output", 'o', A::kRequired, H::kApply, Text<&Options::output>, ""},
                {"overcommit", 'O', A::kNone, H::kIgnore, nullptr,
                 "Cohort allocates what the job asks for"},
                {"oversubscribe", 's', A::kNone, H::kIgnore, nullptr,
                 "Cohort allocates what the job asks for"},
                {"parsable", 0, A::kNone, H::kApply, Flag<&Options::parsable>, ""},
                {"partition", 'p', A::kRequired, H::kApply, Text<&Options::partition>, ""},
                {"prefer", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort has no preferred node features"},
                {"priority", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort orders jobs by its own policy"},
                {"profile", 0, A::kRequired, H::kIgnore, nullptr, "Cohort records its own metrics"},
                {"propagate", 0, A::kOptional, H::kIgnore, nullptr,
                 "Cohort takes no resource limits from the submitter"},
                {"qos", 'q', A::kRequired, H::kApply, Text<&Options::qos>, ""},
                {"quiet", 'Q', A::kNone, H::kApply, Flag<&Options::quiet>, ""},
                {"reboot", 0, A::kNone, H::kIgnore, nullptr, "Cohort does not reboot nodes"},
                {"requeue", 0, A::kOptional, H::kApply, Requeue, ""},
                {"reservation", 0, A::kRequired, H::kIgnore, nullptr, "Cohort has no reservations"},
                {"resources", 0, A::kRequired, H::kUnsupported, nullptr,
                 "Cohort has no hierarchical resources"},
                {"resv-ports", 0, A::kOptional, H::kIgnore, nullptr,
                 "Cohort gives each task its own port"},
                {"runtime", 0, A::kRequired, H::kUnsupported, nullptr,
                 "Cohort has no runtime plugins"},
                {"segment", 0, A::kRequired, H::kIgnore, nullptr, "Cohort places nodes itself"},
                {"signal", 0, A::kRequired, H::kApply,
                 [](std::string_view v, Options& o) -> Status {
                   COHORT_ASSIGN_OR_RETURN(o.signal, ParseSignalSpec(v));
                   return Status::Ok();
                 },
                 ""},
                {"sockets-per-node", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort does not place by socket"},
                {"spread-job", 0, A::kNone, H::kIgnore, nullptr, "Cohort places nodes itself"},
                {"spread-segments", 0, A::kNone, H::kIgnore, nullptr, "Cohort places nodes itself"},
                {"stepmgr", 0, A::kNone, H::kIgnore, nullptr, "Cohort manages steps itself"},
                {"switches", 0, A::kRequired, H::kIgnore, nullptr, "Cohort places nodes itself"},
                {"test-only", 0, A::kNone, H::kUnsupported, nullptr,
                 "Cohort has no trial submission"},
                {"thread-spec", 0, A::kRequired, H::kIgnore, nullptr, "Cohort reserves no threads"},
                {"threads-per-core", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort does not place by thread"},
                {"time", 't', A::kRequired, H::kApply,
                 [](std::string_view v, Options& o) -> Status {
                   COHORT_ASSIGN_OR_RETURN(o.time, ParseTimeLimit(v));
                   return Status::Ok();
                 },
                 ""},
                {"time-min", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort does not shorten a job's time limit"},
                {"tmp", 0, A::kRequired, H::kIgnore, nullptr, "Cohort does not reserve local disk"},
                {"tres-bind", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort binds GPUs to tasks itself"},
                {"tres-per-task", 0, A::kRequired, H::kUnsupported, nullptr,
                 "give --cpus-per-task and --gpus-per-task"},
                {"uid", 0, A::kRequired, H::kUnsupported, nullptr,
                 "a job runs as the user who submits it"},
                {"usage", 0, A::kNone, H::kUnsupported, nullptr, "not a job option"},
                {"use-min-nodes", 0, A::kNone, H::kIgnore, nullptr, "Cohort places nodes itself"},
                {"verbose", 'v', A::kNone, H::kIgnore, nullptr,
                 "Cohort's sbatch has one level of detail"},
                {"version", 'V', A::kNone, H::kUnsupported, nullptr, "not a job option"},
                {"wait", 'W', A::kNone, H::kApply, Flag<&Options::wait>, ""},
                {"wait-all-nodes", 0, A::kRequired, H::kIgnore, nullptr,
                 "Cohort starts a job once all its tasks are placed"},
                {"wckey", 0, A::kRequired, H::kIgnore, nullptr, "Cohort accounts by team"},
                {"wrap", 0, A::kRequired, H::kApply, Text<&Options::wrap>, ""},
};

}  // namespace

std::span<const SbatchOptionSpec> SbatchOptionTable() { return kTable; }

const SbatchOptionSpec* FindLongOption(std::string_view name) {
  for (const auto& spec : kTable) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

const SbatchOptionSpec* FindShortOption(char name) {
  for (const auto& spec : kTable) {
    if (name != 0 && spec.short_name == name) return &spec;
  }
  return nullptr;
}

std::vector<std::string_view> LongOptionsStartingWith(std::string_view prefix) {
  std::vector<std::string_view> names;
  for (const auto& spec : kTable) {
    if (spec.name.starts_with(prefix)) names.push_back(spec.name);
  }
  return names;
}

}  // namespace cohort::slurm
