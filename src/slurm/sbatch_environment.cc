#include "slurm/sbatch_environment.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

namespace cohort::slurm {
namespace {

// What a variable's value is to its option.
enum class Value {
  kValue,     // the option's value
  kFlag,      // nothing: the variable being set gives the flag
  kOptional,  // the option's value when there is one (SBATCH_EXCLUSIVE=user), else the flag
};

struct InputVariable {
  std::string_view name;
  std::string_view option;  // sbatch's long option it stands for
  Value value;
};

// sbatch(1)'s list, each to its option: what Cohort does with the option is the option table's
// (sbatch_option_table.cc), as if it were on the command line.
constexpr auto kInputVariables = std::to_array<InputVariable>({
    {"SBATCH_ACCOUNT", "account", Value::kValue},
    {"SBATCH_ACCTG_FREQ", "acctg-freq", Value::kValue},
    {"SBATCH_ARRAY_INX", "array", Value::kValue},
    {"SBATCH_CLUSTERS", "clusters", Value::kValue},
    {"SBATCH_CONSTRAINT", "constraint", Value::kValue},
    {"SBATCH_CORE_SPEC", "core-spec", Value::kValue},
    {"SBATCH_CPUS_PER_GPU", "cpus-per-gpu", Value::kValue},
    {"SBATCH_DELAY_BOOT", "delay-boot", Value::kValue},
    {"SBATCH_DISTRIBUTION", "distribution", Value::kValue},
    {"SBATCH_ERROR", "error", Value::kValue},
    {"SBATCH_EXCLUSIVE", "exclusive", Value::kOptional},
    {"SBATCH_EXPORT", "export", Value::kValue},
    {"SBATCH_GPU_BIND", "gpu-bind", Value::kValue},
    {"SBATCH_GPU_FREQ", "gpu-freq", Value::kValue},
    {"SBATCH_GPUS", "gpus", Value::kValue},
    {"SBATCH_GPUS_PER_NODE", "gpus-per-node", Value::kValue},
    {"SBATCH_GPUS_PER_TASK", "gpus-per-task", Value::kValue},
    {"SBATCH_GRES", "gres", Value::kValue},
    {"SBATCH_HINT", "hint", Value::kValue},
    {"SBATCH_INPUT", "input", Value::kValue},
    {"SBATCH_JOB_NAME", "job-name", Value::kValue},
    {"SBATCH_MEM_BIND", "mem-bind", Value::kValue},
    {"SBATCH_MEM_PER_CPU", "mem-per-cpu", Value::kValue},
    {"SBATCH_MEM_PER_GPU", "mem-per-gpu", Value::kValue},
    {"SBATCH_MEM_PER_NODE", "mem", Value::kValue},
    {"SBATCH_NETWORK", "network", Value::kValue},
    {"SBATCH_NO_KILL", "no-kill", Value::kFlag},
    {"SBATCH_NO_REQUEUE", "no-requeue", Value::kFlag},
    {"SBATCH_OPEN_MODE", "open-mode", Value::kValue},
    {"SBATCH_OUTPUT", "output", Value::kValue},
    {"SBATCH_OVERCOMMIT", "overcommit", Value::kFlag},
    {"SBATCH_PARTITION", "partition", Value::kValue},
    {"SBATCH_PROFILE", "profile", Value::kValue},
    {"SBATCH_QOS", "qos", Value::kValue},
    {"SBATCH_REQUEUE", "requeue", Value::kFlag},
    {"SBATCH_RESERVATION", "reservation", Value::kValue},
    {"SBATCH_SIGNAL", "signal", Value::kValue},
    {"SBATCH_SPREAD_JOB", "spread-job", Value::kFlag},
    {"SBATCH_THREADS_PER_CORE", "threads-per-core", Value::kValue},
    {"SBATCH_TIMELIMIT", "time", Value::kValue},
    {"SBATCH_USE_MIN_NODES", "use-min-nodes", Value::kFlag},
    {"SBATCH_WAIT", "wait", Value::kFlag},
    {"SBATCH_WAIT_ALL_NODES", "wait-all-nodes", Value::kValue},
    {"SBATCH_WCKEY", "wckey", Value::kValue},
});

}  // namespace

std::string_view SbatchVariableOption(std::string_view variable) {
  for (const auto& v : kInputVariables) {
    if (v.name == variable) return v.option;
  }
  return {};
}

StatusOr<SbatchParse> ParseSbatchEnvironment(const std::map<std::string, std::string>& env) {
  std::vector<SbatchArgument> args;
  for (const auto& v : kInputVariables) {
    auto it = env.find(std::string(v.name));
    if (it == env.end()) continue;
    const bool bare =
        v.value == Value::kFlag || (v.value == Value::kOptional && it->second.empty());
    std::string text =
        bare ? fmt::format("--{}", v.option) : fmt::format("--{}={}", v.option, it->second);
    args.push_back({std::move(text), Origin::Variable(std::string(v.name))});
  }
  return ParseSbatchArguments(args);
}

}  // namespace cohort::slurm
