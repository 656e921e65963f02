#include "model/job_spec_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/units.h"
#include "model/image_reference.h"
#include "model/job_size.h"
#include "model/json_errors.h"
#include "model/limits.h"
#include "model/node_validation.h"
#include "model/secret.h"
#include "model/spec_document.h"
#include "model/spec_fields.h"
#include "model/workdir.h"

namespace cohort {
namespace {

constexpr std::string_view kDefaultSource = "job spec";

constexpr int64_t kMaxAttempts = 100;
constexpr Duration kMaxGracePeriod = std::chrono::hours(1);
constexpr Duration kMaxBackoff = std::chrono::hours(1);

// Canonical text of a duration that ParseDuration reads back exactly, to the microsecond as
// Duration counts (the state store keeps a job's spec in this form).
std::string DurationText(Duration d) {
  if (d <= Duration::zero()) return FormatDuration(d);
  Duration rest = d % std::chrono::seconds(1);
  std::string text = d >= std::chrono::seconds(1) ? FormatDuration(d - rest) : "";
  int64_t us = rest.count();
  if (us % 1000 != 0) return text + fmt::format("{}us", us);
  if (us != 0) text += fmt::format("{}ms", us / 1000);
  return text;
}

using Fields = std::span<const std::string_view>;
constexpr std::array<std::string_view, 15> kJobFields = {
    "name",    "team",        "priority",     "framework",   "tasks",
    "restart", "max_runtime", "grace_period", "constraints", "datasets",
    "context", "array",       "depends_on",   "slurm",       "session"};
constexpr std::array<std::string_view, 8> kTaskFields = {
    "role", "replicas", "resources", "command", "env", "workdir", "distinct_nodes", "image"};
constexpr std::array<std::string_view, 3> kResourceFields = {"gpus", "cpus", "memory"};
constexpr std::array<std::string_view, 5> kRestartFields = {"max_attempts", "on", "backoff",
                                                            "max_backoff", "fence"};
constexpr std::array<std::string_view, 2> kConstraintFields = {"gpu_model", "labels"};

constexpr std::array<std::string_view, 9> kReservedEnv = {
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK",
    "LOCAL_RANK",           "LOCAL_WORLD_SIZE",  "TF_CONFIG"};
constexpr std::string_view kReservedEnvPrefix = "COHORT_";
// What one framework sets besides the above (framework/task_environment.cc): reserved only in
// its jobs, so that a job of another framework may still use the name for itself.
std::vector<std::string_view> FrameworkReservedEnv(Framework framework) {
  switch (framework) {
    case Framework::kMpi:
      return {"OMPI_MCA_plm_rsh_agent", "OMPI_MCA_orte_default_hostfile",
              "OMPI_MCA_plm_rsh_no_tree_spawn", "OMPI_MCA_orte_leave_session_attached"};
    case Framework::kJax:
      return {"JAX_COORDINATOR_ADDRESS", "JAX_PROCESS_COUNT", "JAX_PROCESS_ID"};
    case Framework::kDeepSpeed:
      return {"NODE_RANK", "LOCAL_SIZE", "CROSS_RANK", "CROSS_SIZE"};
    case Framework::kNone:
    case Framework::kPyTorch:
    case Framework::kTensorFlow:
    case Framework::kSlurm:  // SLURM_*: by its prefix (kSlurmEnvPrefixes)
      break;
  }
  return {};
}
// What a Slurm job's tasks get from Cohort as Slurm would set it (framework/slurm.cc).
constexpr std::array<std::string_view, 2> kSlurmEnvPrefixes = {"SLURM_", "SLURMD_"};
constexpr std::array<std::string_view, 2> kMpiRoles = {"launcher", "worker"};

constexpr std::array<std::string_view, 4> kTensorFlowRoles = {"chief", "worker", "ps", "evaluator"};
constexpr std::string_view kCommandHint = "must be a list of strings, e.g. [python3, train.py]";

// The mappings of the schema, each with its own fields.
enum class Level { kJob, kTask, kResources, kRestart, kConstraints };

Fields KnownFields(Level level) {
  switch (level) {
    case Level::kJob:
      return kJobFields;
    case Level::kTask:
      return kTaskFields;
    case Level::kResources:
      return kResourceFields;
    case Level::kRestart:
      return kRestartFields;
    case Level::kConstraints:
      return kConstraintFields;
  }
  return kJobFields;
}

bool Contains(Fields fields, std::string_view s) {
  return std::find(fields.begin(), fields.end(), s) != fields.end();
}

// ---------------------------------------------------------------------------------------------
// Validation.

class Validator {
 public:
  Validator(std::vector<std::string> errors, std::string base_dir)
      : errors_(std::move(errors)), base_dir_(std::move(base_dir)) {}

  std::vector<std::string>& errors() { return errors_; }

  JobSpec Job(const Json& doc) {
    JobSpec spec;
    if (doc.is_null()) {
      errors_.push_back("job spec is empty; it needs at least name and tasks");
      return spec;
    }
    if (!doc.is_object()) {
      errors_.push_back(
          fmt::format("job spec must be a mapping with fields such as name and tasks, got {}",
                      DescribeSpecValue(doc)));
      return spec;
    }
    Unknown(doc, "", Level::kJob);
    Identifier(doc, "", "name", kMaxJobNameLength, true, &spec.name);
    Identifier(doc, "", "team", kMaxTeamNameLength, false, &spec.team);
    if (const Json* v = Find(doc, "priority")) Priority(*v, &spec.priority);
    if (const Json* v = Find(doc, "framework")) FrameworkField(*v, &spec.framework);
    framework_ = spec.framework;
    // Read before the tasks: a session's task has no command of its own.
    if (const Json* v = Find(doc, "session")) spec.session = ParseSessionSection(*v, errors_);
    session_ = spec.session.has_value();

    if (const Json* v = Find(doc, "tasks")) {
      if (!v->is_array()) {
        Error("tasks", fmt::format("must be a list of task groups, got {}", DescribeSpecValue(*v)));
      } else if (v->empty()) {
        Error("tasks", "must list at least one task group");
      } else {
        for (size_t i = 0; i < v->size(); ++i) {
          spec.tasks.push_back(Group((*v)[i], IndexPath("tasks", i)));
        }
      }
    } else {
      Error("tasks", "required field is missing");
    }

    if (const Json* v = Find(doc, "restart")) Restart(*v, &spec.restart);
    if (const Json* v = Find(doc, "max_runtime")) {
      Duration d{};
      if (DurationField(*v, "max_runtime", &d)) {
        if (d <= Duration::zero()) {
          Error("max_runtime",
                fmt::format("must be longer than 0s, got {}", DescribeSpecValue(*v)));
        } else {
          spec.max_runtime = d;
        }
      }
    }
    if (const Json* v = Find(doc, "grace_period")) {
      Duration d{};
      if (DurationField(*v, "grace_period", &d)) {
        if (d > kMaxGracePeriod) {
          Error("grace_period", fmt::format("must be at most 1h, got {}", DescribeSpecValue(*v)));
        } else {
          spec.grace_period = d;
        }
      }
    }

    if (const Json* v = Find(doc, "constraints")) ConstraintsField(*v, &spec.constraints);
    if (const Json* v = Find(doc, "datasets")) DatasetsField(*v, &spec.datasets);
    if (const Json* v = Find(doc, "context")) ContextField(*v, &spec.context);
    if (const Json* v = Find(doc, "array")) ArrayField(*v, &spec.array);
    if (const Json* v = Find(doc, "depends_on")) DependsOnField(*v, &spec.depends_on);
    if (const Json* v = Find(doc, "slurm")) spec.slurm = ParseSlurmSection(*v, errors_);

    CrossChecks(doc, spec);
    return spec;
  }

 private:
  void Error(const std::string& path, std::string_view reason) {
    errors_.push_back(fmt::format("{}: {}", path, reason));
  }

  static const Json* Find(const Json& obj, std::string_view key) {
    auto it = obj.find(std::string(key));
    return it == obj.end() ? nullptr : &*it;
  }

  // Fields of `obj` that the schema does not know, with the closest known name when there is
  // one, or where the field belongs when it is in the wrong place.
  void Unknown(const Json& obj, const std::string& path, Level level) {
    Fields known = KnownFields(level);
    for (const auto& [key, value] : obj.items()) {
      if (Contains(known, key)) continue;
      std::string reason = "unknown field; ";
      std::string hint = Misplaced(level, key);
      reason += hint.empty() ? UnknownFieldHint(key, known) : hint;
      Error(ChildPath(path, key), reason);
    }
  }

  // A known field of another level of the schema: say where it goes.
  static std::string Misplaced(Level level, const std::string& key) {
    const bool job_level = level == Level::kJob;
    const bool task_level = level == Level::kTask;
    if (job_level && key == "max_attempts") return "did you mean restart.max_attempts?";
    if (job_level && Contains(kTaskFields, key)) {
      return "it belongs in a task group, an entry of tasks";
    }
    if ((job_level || task_level) && Contains(kResourceFields, key)) {
      return job_level ? "it belongs in tasks[].resources" : "it belongs under resources";
    }
    if (task_level && (Contains(kJobFields, key) || key == "max_attempts")) {
      return "it belongs at the top level of the job spec";
    }
    return "";
  }

  // name, team (model/spec_fields.h).
  void Identifier(const Json& obj, const std::string& path, std::string_view field,
                  size_t max_length, bool required, std::string* out) {
    std::string p = ChildPath(path, field);
    const Json* v = Find(obj, field);
    if (v == nullptr) {
      if (required) Error(p, "required field is missing");
      return;
    }
    if (auto problem = IdentifierProblem(*v, field, max_length)) {
      Error(p, *problem);
      return;
    }
    *out = v->get<std::string>();
  }

  // An integer in [lo, hi]; otherwise reports "must be an integer from lo to hi, got ...".
  bool Integer(const Json& v, const std::string& path, int64_t lo, int64_t hi, int64_t* out) {
    bool ok = false;
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      ok = hi >= 0 && u <= static_cast<uint64_t>(hi) && static_cast<int64_t>(u) >= lo;
      if (ok) *out = static_cast<int64_t>(u);
    } else if (v.is_number_integer()) {
      int64_t i = v.get<int64_t>();
      ok = i >= lo && i <= hi;
      if (ok) *out = i;
    }
    if (!ok)
      Error(path,
            fmt::format("must be an integer from {} to {}, got {}", lo, hi, DescribeSpecValue(v)));
    return ok;
  }

  void Priority(const Json& v, int* out) {
    if (v.is_string()) {
      if (auto named = ParsePriorityName(v.get_ref<const std::string&>())) {
        *out = *named;
        return;
      }
    } else if (v.is_number_integer()) {
      bool in_range = v.is_number_unsigned()
                          ? v.get<uint64_t>() <= static_cast<uint64_t>(kMaxPriority)
                          : v.get<int64_t>() >= kMinPriority && v.get<int64_t>() <= kMaxPriority;
      if (in_range) {
        *out = static_cast<int>(v.get<int64_t>());
        return;
      }
    }
    Error("priority", fmt::format("{} is not a priority; use {} or an integer from {} to {}",
                                  DescribeSpecValue(v), NameList(kPriorityNames, ", "),
                                  kMinPriority, kMaxPriority));
  }

  void FrameworkField(const Json& v, Framework* out) {
    if (v.is_string()) {
      if (auto f = ParseFramework(v.get_ref<const std::string&>())) {
        *out = *f;
        return;
      }
    }
    Error("framework", fmt::format("{} is not a framework; use {}", DescribeSpecValue(v),
                                   NameList(kFrameworkNames)));
  }

  TaskGroupSpec Group(const Json& v, const std::string& path) {
    TaskGroupSpec group;
    group.resources = Resources{.gpus = 0, .milli_cpus = 1000, .memory_bytes = int64_t{1} << 30};
    if (!v.is_object()) {
      Error(path, fmt::format("must be a mapping with role, command and the other task fields, "
                              "got {}",
                              DescribeSpecValue(v)));
      return group;
    }
    Unknown(v, path, Level::kTask);
    Role(v, path, &group.role);
    if (const Json* r = Find(v, "replicas")) Replicas(*r, ChildPath(path, "replicas"), &group);
    if (const Json* r = Find(v, "resources"))
      ResourcesField(*r, ChildPath(path, "resources"), &group);
    // An MPI job's workers need no command of their own: mpirun starts the ranks in them.
    const Json* command = Find(v, "command");
    bool optional = framework_ == Framework::kMpi && group.role == "worker";
    if (session_) {
      if (command && !(command->is_array() && command->empty())) {
        Error(ChildPath(path, "command"),
              "a session's task runs the shell Cohort starts; it has no command of its own");
      }
    } else if (framework_ == Framework::kSlurm) {
      // Its tasks serve srun; the first runs slurm.script besides.
      if (command && !(command->is_array() && command->empty())) {
        Error(ChildPath(path, "command"),
              "a Slurm job's tasks have no command: the first node runs slurm.script");
      }
    } else if (!optional || (command && !(command->is_array() && command->empty()))) {
      Command(v, path, &group.command);
    }
    if (const Json* e = Find(v, "env")) Env(*e, ChildPath(path, "env"), &group);
    if (const Json* w = Find(v, "workdir")) Workdir(*w, ChildPath(path, "workdir"), &group.workdir);
    if (const Json* d = Find(v, "distinct_nodes")) {
      if (!d->is_boolean()) {
        Error(ChildPath(path, "distinct_nodes"),
              fmt::format("must be true or false, got {}", DescribeSpecValue(*d)));
      } else {
        group.distinct_nodes = d->get<bool>();
      }
    }
    if (const Json* image = Find(v, "image")) Image(*image, ChildPath(path, "image"), &group.image);
    if (framework_ == Framework::kSlurm) {
      // A Slurm job's tasks are its nodes.
      if (const Json* d = Find(v, "distinct_nodes"); d && *d == false) {
        Error(ChildPath(path, "distinct_nodes"), "a Slurm job has one task per node: it is true");
      }
      group.distinct_nodes = true;
    }
    return group;
  }

  void Image(const Json& v, const std::string& path, std::string* out) {
    if (!v.is_string()) {
      Error(path, fmt::format("must be an image reference such as registry.example.com/team/"
                              "pytorch:2.1, got {}",
                              DescribeSpecValue(v)));
      return;
    }
    auto ref = ParseImageReference(v.get_ref<const std::string&>());
    if (!ref.ok()) {
      Error(path, ref.status().message());
      return;
    }
    // Their tasks run Cohort's own tools (cohort-exec, srun), host programs that an image lacks.
    if (framework_ == Framework::kMpi || framework_ == Framework::kSlurm) {
      Error(path, fmt::format("the tasks of a {} job run on the node itself; containers are for "
                              "the other frameworks (docs/runtimes.md)",
                              FrameworkName(framework_)));
      return;
    }
    *out = ref->ToString();
  }

  void Role(const Json& obj, const std::string& path, std::string* out) {
    std::string p = ChildPath(path, "role");
    const Json* v = Find(obj, "role");
    if (v == nullptr) {
      Error(p, "required field is missing");
      return;
    }
    if (!v->is_string()) {
      Error(p, fmt::format("must be a string, got {}", DescribeSpecValue(*v)));
      return;
    }
    const std::string& s = v->get_ref<const std::string&>();
    if (!IsValidRole(s)) {
      Error(p, fmt::format("{} is not a valid role: use 1 to {} lowercase letters, digits, '_' or "
                           "'-', starting with a letter",
                           DescribeSpecValue(*v), kMaxRoleLength));
      return;
    }
    *out = s;
  }

  void ResourcesField(const Json& v, const std::string& path, TaskGroupSpec* group) {
    if (!v.is_object()) {
      Error(path, fmt::format("must be a mapping with gpus, cpus and memory, got {}",
                              DescribeSpecValue(v)));
      return;
    }
    Unknown(v, path, Level::kResources);
    if (const Json* g = Find(v, "gpus")) {
      int64_t n = 0;
      if (Integer(*g, ChildPath(path, "gpus"), 0, kMaxTaskGpus, &n)) group->resources.gpus = n;
    }
    if (const Json* c = Find(v, "cpus")) Cpus(*c, ChildPath(path, "cpus"), &group->resources);
    if (const Json* m = Find(v, "memory")) Memory(*m, ChildPath(path, "memory"), &group->resources);
  }

  void Cpus(const Json& v, const std::string& path, Resources* out) {
    int64_t milli = 0;
    if (v.is_string()) {
      auto parsed = Guarded([&] { return ParseMilliCpus(v.get_ref<const std::string&>()); },
                            DescribeSpecValue(v) + " is not a CPU amount; use e.g. 4, 0.5 or 500m");
      if (!parsed.ok()) {
        Error(path, parsed.status().message());
        return;
      }
      milli = *parsed;
    } else if (v.is_number()) {
      double cpus = v.get<double>();
      if (!(cpus > 0)) {
        Error(path, fmt::format("must be greater than 0, got {}", DescribeSpecValue(v)));
        return;
      }
      if (cpus > static_cast<double>(kMaxTaskCpus)) {
        Error(path, fmt::format("must be at most {}, got {}", kMaxTaskCpus, DescribeSpecValue(v)));
        return;
      }
      double exact = cpus * 1000;
      double rounded = std::round(exact);
      if (std::abs(exact - rounded) > 1e-6 + exact * 1e-15) {
        Error(path, fmt::format("{} is finer than a thousandth of a CPU", DescribeSpecValue(v)));
        return;
      }
      milli = static_cast<int64_t>(rounded);
    } else {
      Error(path, fmt::format("must be a number of CPUs (4, 0.5) or a string (\"500m\"), got {}",
                              DescribeSpecValue(v)));
      return;
    }
    if (milli <= 0) {
      Error(path, fmt::format("must be greater than 0, got {}", DescribeSpecValue(v)));
      return;
    }
    if (milli > kMaxTaskCpus * 1000) {
      Error(path, fmt::format("must be at most {}, got {}", kMaxTaskCpus, DescribeSpecValue(v)));
      return;
    }
    out->milli_cpus = milli;
  }

  void Memory(const Json& v, const std::string& path, Resources* out) {
    int64_t bytes = 0;
    if (v.is_string()) {
      auto parsed = Guarded([&] { return ParseByteSize(v.get_ref<const std::string&>()); },
                            DescribeSpecValue(v) + " is not a size; use e.g. 32Gi");
      if (!parsed.ok()) {
        Error(path, parsed.status().message());
        return;
      }
      bytes = *parsed;
    } else if (v.is_number_unsigned()) {
      bytes = v.get<uint64_t>() > static_cast<uint64_t>(kMaxTaskMemoryBytes)
                  ? kMaxTaskMemoryBytes + 1
                  : static_cast<int64_t>(v.get<uint64_t>());
    } else if (v.is_number_integer()) {
      bytes = v.get<int64_t>();
    } else {
      Error(path, fmt::format("must be a size such as \"32Gi\" or a number of bytes, got {}",
                              DescribeSpecValue(v)));
      return;
    }
    if (bytes <= 0) {
      Error(path, fmt::format("must be greater than 0, got {}", DescribeSpecValue(v)));
      return;
    }
    if (bytes > kMaxTaskMemoryBytes) {
      Error(path, fmt::format("must be at most {}, got {}", FormatByteSize(kMaxTaskMemoryBytes),
                              DescribeSpecValue(v)));
      return;
    }
    out->memory_bytes = bytes;
  }

  void Command(const Json& obj, const std::string& path, std::vector<std::string>* out) {
    std::string p = ChildPath(path, "command");
    const Json* v = Find(obj, "command");
    if (v == nullptr) {
      Error(p, "required field is missing");
      return;
    }
    if (!v->is_array()) {
      Error(p, fmt::format("{}, got {}", kCommandHint, DescribeSpecValue(*v)));
      return;
    }
    if (v->empty()) {
      Error(p, fmt::format("{}, got an empty list", kCommandHint));
      return;
    }
    if (v->size() > kMaxCommandArgs) {
      Error(p, fmt::format("has {} arguments; at most {} are allowed", v->size(), kMaxCommandArgs));
      return;
    }
    std::vector<std::string> command;
    bool ok = true;
    size_t bytes = 0;
    for (size_t i = 0; i < v->size(); ++i) {
      const Json& arg = (*v)[i];
      std::string ap = IndexPath(p, i);
      if (!arg.is_string()) {
        Error(ap, fmt::format("must be a string, got {}; command {}", DescribeSpecValue(arg),
                              kCommandHint));
        ok = false;
        continue;
      }
      const std::string& s = arg.get_ref<const std::string&>();
      bytes += s.size();
      if (s.find('\0') != std::string::npos) {
        Error(ap, "must not contain a NUL character");
        ok = false;
      } else if (i == 0 && s.empty()) {
        Error(ap, "the program to run must not be empty");
        ok = false;
      }
      command.push_back(s);
    }
    if (bytes > kMaxCommandBytes) {
      Error(p, fmt::format("its arguments add up to {} bytes; at most {} ({}) are allowed", bytes,
                           kMaxCommandBytes, FormatByteSize(kMaxCommandBytes)));
      ok = false;
    }
    if (ok) *out = std::move(command);
  }

  void Env(const Json& v, const std::string& path, TaskGroupSpec* group) {
    if (!v.is_object()) {
      Error(path, fmt::format("must be a mapping of NAME: value, got {}", DescribeSpecValue(v)));
      return;
    }
    if (v.size() > kMaxEnvVars) {
      Error(path, fmt::format("has {} variables; at most {} are allowed", v.size(), kMaxEnvVars));
      return;
    }
    size_t bytes = 0;
    for (const auto& [name, value] : v.items()) {
      if (name.size() > kMaxEnvNameLength) {
        Error(ChildPath(path, name.substr(0, 32) + "..."),
              fmt::format("a variable name is at most {} characters, got {}", kMaxEnvNameLength,
                          name.size()));
        continue;
      }
      std::string p = ChildPath(path, name);
      auto name_char = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
      };
      if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) ||
          !std::all_of(name.begin(), name.end(), name_char)) {
        Error(p,
              "not a valid variable name: use letters, digits and '_', not starting with a digit");
        continue;
      }
      if (name.starts_with(kReservedEnvPrefix) ||
          std::find(kReservedEnv.begin(), kReservedEnv.end(), name) != kReservedEnv.end()) {
        Error(p, "is set by Cohort and cannot be set in the spec");
        continue;
      }
      if (Contains(FrameworkReservedEnv(framework_), name) ||
          (framework_ == Framework::kSlurm &&
           std::any_of(kSlurmEnvPrefixes.begin(), kSlurmEnvPrefixes.end(),
                       [&](std::string_view prefix) { return name.starts_with(prefix); }))) {
        Error(p, fmt::format("is set by Cohort in a job of framework {} and cannot be set in the "
                             "spec",
                             FrameworkName(framework_)));
        continue;
      }
      if (value.is_object()) {
        // A reference counts as a variable, and its names as bytes; the value is counted when
        // the master resolves it.
        if (auto secret = SecretReference(value, p)) {
          bytes += name.size() + secret->size();
          group->env_secrets[name] = std::move(*secret);
        }
        continue;
      }
      std::string text;
      if (value.is_string()) {
        text = value.get<std::string>();
      } else if (value.is_boolean() || value.is_number()) {
        text = value.dump();
      } else {
        Error(p, fmt::format("must be a string, number, bool or {{secret: NAME}}, got {}{}",
                             DescribeSpecValue(value),
                             value.is_null() ? "; write \"\" for an empty value" : ""));
        continue;
      }
      if (text.find('\0') != std::string::npos) {
        Error(p, "must not contain a NUL character");
        continue;
      }
      if (text.size() > kMaxEnvValueBytes) {
        Error(p, fmt::format("is {} bytes; a value is at most {} ({})", text.size(),
                             kMaxEnvValueBytes, FormatByteSize(kMaxEnvValueBytes)));
        continue;
      }
      bytes += name.size() + text.size();
      group->env[name] = std::move(text);
    }
    if (bytes > kMaxEnvBytes) {
      Error(path, fmt::format("names and values add up to {} bytes; at most {} ({}) are allowed",
                              bytes, kMaxEnvBytes, FormatByteSize(kMaxEnvBytes)));
    }
  }

  // `{secret: NAME}`: the name of a secret of the job's user or team (model/secret.h).
  std::optional<std::string> SecretReference(const Json& v, const std::string& path) {
    constexpr std::string_view kShape =
        "a secret reference is {secret: NAME}, e.g. {secret: wandb} (set with `cohort secret "
        "set wandb`)";
    bool ok = true;
    for (const auto& [key, value] : v.items()) {
      if (key != "secret") {
        Error(ChildPath(path, key), fmt::format("unknown field; {}", kShape));
        ok = false;
      }
    }
    auto it = v.find("secret");
    if (it == v.end()) {
      if (ok) Error(path, fmt::format("the mapping has no field secret; {}", kShape));
      return std::nullopt;
    }
    std::string p = ChildPath(path, "secret");
    if (!it->is_string()) {
      Error(p, fmt::format("must be the secret's name, a string, got {}", DescribeSpecValue(*it)));
      return std::nullopt;
    }
    const std::string& name = it->get_ref<const std::string&>();
    if (Status valid = ValidateSecretName(name, p); !valid.ok()) {
      errors_.push_back(valid.message());
      return std::nullopt;
    }
    if (!ok) return std::nullopt;
    return name;
  }

  // Absolute, or relative without "..": below the spec file's directory when there is one
  // (the CLI), else below the task's own directory on its node (model/workdir.h).
  void Workdir(const Json& v, const std::string& path, std::string* out) {
    if (!v.is_string()) {
      Error(path, fmt::format("must be a string, got {}", DescribeSpecValue(v)));
      return;
    }
    const std::string& given = v.get_ref<const std::string&>();
    if (given.empty()) {
      Error(path, "must not be empty; leave the field out to run in the task's own directory");
      return;
    }
    if (auto problem = WorkdirProblem(given)) {
      Error(path, fmt::format("{} {}", DescribeSpecValue(v), *problem));
      return;
    }
    *out = AnchorWorkdir(base_dir_, given);
  }

  // Each NAME, NAME:VERSION, TEAM/NAME or TEAM/NAME:VERSION; no two with the same name, since
  // each is seen at $COHORT_DATA_DIR/NAME.
  void DatasetsField(const Json& v, std::vector<DatasetRef>* out) {
    if (!v.is_array()) {
      Error("datasets", fmt::format("must be a list of datasets such as [imagenet, "
                                    "imagenet-labels:2], got {}",
                                    DescribeSpecValue(v)));
      return;
    }
    if (v.size() > kMaxJobDatasets) {
      Error("datasets",
            fmt::format("names {} datasets; a job may name at most {}", v.size(), kMaxJobDatasets));
      return;
    }
    std::map<std::string, size_t> seen;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string path = IndexPath("datasets", i);
      if (!v[i].is_string()) {
        Error(path, fmt::format("must be a dataset such as imagenet or imagenet:2, got {}",
                                DescribeSpecValue(v[i])));
        continue;
      }
      auto ref = ParseDatasetRef(v[i].get<std::string>(), path);
      if (!ref.ok()) {
        errors_.push_back(ref.status().message());
        continue;
      }
      if (auto [it, fresh] = seen.emplace(ref->name, i); !fresh) {
        Error(path, fmt::format("names {} again (datasets[{}]); each dataset is seen at "
                                "$COHORT_DATA_DIR/NAME, so a job names a dataset once",
                                ref->name, it->second));
        continue;
      }
      out->push_back(std::move(*ref));
    }
  }

  // `array: {indices: "0-99:2", max_parallel: 10}`; indices may also be a list of integers.
  void ArrayField(const Json& v, std::optional<ArraySpec>* out) {
    constexpr std::string_view kShape =
        "must be a mapping such as {indices: \"0-99\", max_parallel: 10}";
    if (!v.is_object()) {
      Error("array", fmt::format("{}, got {}", kShape, DescribeSpecValue(v)));
      return;
    }
    for (const auto& [key, value] : v.items()) {
      if (key != "indices" && key != "max_parallel") {
        Error(ChildPath("array", key), "unknown field; expected indices and max_parallel");
      }
    }
    ArraySpec array;
    const Json* indices = Find(v, "indices");
    if (!indices) {
      Error("array.indices", "required field is missing");
    } else if (indices->is_string()) {
      auto parsed = ParseArrayIndices(indices->get<std::string>(), "array.indices");
      if (!parsed.ok()) {
        errors_.push_back(parsed.status().message());
      } else {
        array.indices = std::move(*parsed);
      }
    } else if (indices->is_array() && !indices->empty() && indices->size() <= kMaxArrayJobs) {
      std::set<int> seen;
      for (size_t i = 0; i < indices->size(); ++i) {
        int64_t n = 0;
        if (Integer((*indices)[i], IndexPath("array.indices", i), 0, kMaxArrayIndex, &n)) {
          seen.insert(static_cast<int>(n));
        }
      }
      array.indices.assign(seen.begin(), seen.end());
    } else {
      Error("array.indices",
            fmt::format("must be indices such as \"0-99\", \"0-99:2,200\" or a list of 1 to {} "
                        "integers, got {}",
                        kMaxArrayJobs, DescribeSpecValue(*indices)));
    }
    if (const Json* m = Find(v, "max_parallel")) {
      int64_t n = 0;
      if (Integer(*m, "array.max_parallel", 1, static_cast<int64_t>(kMaxArrayJobs), &n)) {
        array.max_parallel = static_cast<int>(n);
      }
    }
    if (!array.indices.empty()) *out = std::move(array);
  }

  // `depends_on: [{job: 12, on: success}, 13]`: a bare id waits for that job's success.
  void DependsOnField(const Json& v, std::vector<Dependency>* out) {
    if (!v.is_array()) {
      Error("depends_on", fmt::format("must be a list such as [{{job: 12, on: success}}], got {}",
                                      DescribeSpecValue(v)));
      return;
    }
    if (v.size() > kMaxJobDependencies) {
      Error("depends_on", fmt::format("names {} jobs; a job may depend on at most {}", v.size(),
                                      kMaxJobDependencies));
      return;
    }
    std::set<JobId> seen;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string path = IndexPath("depends_on", i);
      Dependency d;
      const Json* job = &v[i];
      if (v[i].is_object()) {
        for (const auto& [key, value] : v[i].items()) {
          if (key != "job" && key != "on") {
            Error(ChildPath(path, key), "unknown field; expected job and on");
          }
        }
        job = Find(v[i], "job");
        if (!job) {
          Error(ChildPath(path, "job"), "required field is missing");
          continue;
        }
        if (const Json* on = Find(v[i], "on")) {
          auto parsed = on->is_string() ? Parse(kDependencyConditionNames, on->get<std::string>())
                                        : std::nullopt;
          if (!parsed) {
            Error(ChildPath(path, "on"),
                  fmt::format("must be success, failure or end, got {}", DescribeSpecValue(*on)));
            continue;
          }
          d.on = *parsed;
        }
      }
      int64_t id = 0;
      if (!Integer(*job, v[i].is_object() ? ChildPath(path, "job") : path, 1,
                   std::numeric_limits<int64_t>::max(), &id)) {
        continue;
      }
      d.job = id;
      if (!seen.insert(id).second) {
        Error(path, fmt::format("names job {} again; name each job once", id));
        continue;
      }
      out->push_back(d);
    }
  }

  void ContextField(const Json& v, std::string* out) {
    auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
    const std::string text = v.is_string() ? v.get<std::string>() : "";
    if (!v.is_string() || text.size() != 64 || !std::all_of(text.begin(), text.end(), hex)) {
      Error("context",
            fmt::format("must be the SHA-256 of an uploaded context (64 lowercase hex digits; "
                        "cohort run and cohort submit set it), got {}",
                        DescribeSpecValue(v)));
      return;
    }
    *out = text;
  }

  void ConstraintsField(const Json& v, Constraints* out) {
    if (!v.is_object()) {
      Error(
          "constraints",
          fmt::format("must be a mapping such as {{gpu_model: A100, labels: {{rack: r1}}}}, got {}",
                      DescribeSpecValue(v)));
      return;
    }
    Unknown(v, "constraints", Level::kConstraints);
    if (const Json* m = Find(v, "gpu_model")) {
      if (!m->is_string() || m->get_ref<const std::string&>().empty()) {
        Error("constraints.gpu_model",
              fmt::format("must be a GPU model name as `cohort nodes` shows it, got {}",
                          DescribeSpecValue(*m)));
      } else if (m->get_ref<const std::string&>().size() > kMaxGpuModelLength) {
        Error("constraints.gpu_model",
              fmt::format("must be at most {} characters, got {}", kMaxGpuModelLength,
                          m->get_ref<const std::string&>().size()));
      } else {
        out->gpu_model = m->get<std::string>();
      }
    }
    if (const Json* l = Find(v, "labels")) {
      if (!l->is_object()) {
        Error("constraints.labels",
              fmt::format("must be a mapping of label: value, got {}", DescribeSpecValue(*l)));
        return;
      }
      if (l->size() > kMaxLabels) {
        Error("constraints.labels",
              fmt::format("has {} labels; at most {} are allowed", l->size(), kMaxLabels));
        return;
      }
      for (const auto& [key, value] : l->items()) {
        std::string p = ChildPath("constraints.labels", key);
        if (!IsValidLabelKey(key)) {
          Error(p, fmt::format("not a valid label name: use 1 to {} letters, digits, '.', '_', "
                               "'/' and '-'",
                               kMaxLabelKeyLength));
          continue;
        }
        std::string text;
        if (value.is_string()) {
          text = value.get<std::string>();
        } else if (value.is_boolean() || value.is_number()) {
          text = value.dump();
        } else {
          Error(p, fmt::format("must be a string, got {}", DescribeSpecValue(value)));
          continue;
        }
        if (text.size() > kMaxLabelValueLength) {
          Error(p, fmt::format("must be at most {} characters, got {}", kMaxLabelValueLength,
                               text.size()));
          continue;
        }
        out->labels[key] = std::move(text);
      }
    }
  }

  void Restart(const Json& v, RestartPolicy* out) {
    if (!v.is_object()) {
      Error("restart", fmt::format("must be a mapping such as {{max_attempts: 3}}, got {}",
                                   DescribeSpecValue(v)));
      return;
    }
    Unknown(v, "restart", Level::kRestart);
    if (const Json* m = Find(v, "max_attempts")) {
      int64_t n = 0;
      if (Integer(*m, "restart.max_attempts", 1, kMaxAttempts, &n)) {
        out->max_attempts = static_cast<int>(n);
      }
    }
    if (const Json* on = Find(v, "on")) {
      if (!on->is_array()) {
        Error("restart.on",
              fmt::format("must be a list such as [failure, node_lost, preempted], got {}",
                          DescribeSpecValue(*on)));
      } else {
        out->on.clear();
        for (size_t i = 0; i < on->size(); ++i) {
          const Json& c = (*on)[i];
          std::string p = fmt::format("restart.on[{}]", i);
          auto cause =
              c.is_string() ? ParseRestartCause(c.get_ref<const std::string&>()) : std::nullopt;
          if (!cause) {
            Error(p, fmt::format("{} is not a cause; use {}", DescribeSpecValue(c),
                                 NameList(kRestartCauseNames)));
          } else if (!out->RestartsOn(*cause)) {
            out->on.push_back(*cause);
          }
        }
      }
    }
    Duration d{};
    if (const Json* b = Find(v, "backoff"); b && DurationField(*b, "restart.backoff", &d)) {
      if (d > kMaxBackoff) {
        Error("restart.backoff", fmt::format("must be at most 1h, got {}", DescribeSpecValue(*b)));
      } else {
        out->backoff = d;
        if (!Find(v, "max_backoff")) out->max_backoff = std::max(out->max_backoff, d);
      }
    }
    if (const Json* b = Find(v, "max_backoff"); b && DurationField(*b, "restart.max_backoff", &d)) {
      if (d > kMaxBackoff) {
        Error("restart.max_backoff",
              fmt::format("must be at most 1h, got {}", DescribeSpecValue(*b)));
      } else if (d < out->backoff) {
        Error("restart.max_backoff",
              fmt::format("{} is shorter than restart.backoff ({})", DescribeSpecValue(*b),
                          DurationText(out->backoff)));
      } else {
        out->max_backoff = d;
      }
    }
    if (const Json* f = Find(v, "fence")) {
      if (!f->is_boolean()) {
        Error("restart.fence", fmt::format("must be true or false, got {}", DescribeSpecValue(*f)));
      } else {
        out->fence = f->get<bool>();
      }
    }
  }

  bool DurationField(const Json& v, const std::string& path, Duration* out) {
    if (!v.is_string()) {
      Error(path, fmt::format("must be a duration such as \"90m\", \"2h\" or \"1h30m\", got {}",
                              DescribeSpecValue(v)));
      return false;
    }
    auto parsed = Guarded([&] { return ParseDuration(v.get_ref<const std::string&>()); },
                          DescribeSpecValue(v) + " is not a duration; use e.g. 90m, 2h or 1h30m");
    if (!parsed.ok()) {
      Error(path, parsed.status().message());
      return false;
    }
    // To the microsecond, as Duration counts; the canonical form (ToJson) says exactly the same.
    *out = *parsed;
    return true;
  }

  // `replicas: 4`, or `replicas: {min: 2, max: 8}` for an elastic group.
  void Replicas(const Json& v, const std::string& path, TaskGroupSpec* group) {
    int64_t n = 0;
    if (!v.is_object()) {
      if (Integer(v, path, 1, kMaxTasks, &n)) group->replicas = static_cast<int>(n);
      return;
    }
    for (const auto& [key, value] : v.items()) {
      if (key != "min" && key != "max") {
        Error(ChildPath(path, key), "unknown field; expected min and max");
      }
    }
    int64_t min = 0, max = 0;
    const Json* lo = Find(v, "min");
    const Json* hi = Find(v, "max");
    if (!lo) Error(ChildPath(path, "min"), "required field is missing");
    if (!hi) Error(ChildPath(path, "max"), "required field is missing");
    bool ok_lo = lo && Integer(*lo, ChildPath(path, "min"), 1, kMaxTasks, &min);
    bool ok_hi = hi && Integer(*hi, ChildPath(path, "max"), 1, kMaxTasks, &max);
    if (!ok_lo || !ok_hi) return;
    if (max < min) {
      Error(ChildPath(path, "max"), fmt::format("must be at least min ({}), got {}", min, max));
      return;
    }
    group->replicas = static_cast<int>(min);
    group->max_replicas = max > min ? static_cast<int>(max) : 0;
  }

  void CrossChecks(const Json& doc, const JobSpec& spec) {
    const Json* tasks = Find(doc, "tasks");
    if (tasks == nullptr || !tasks->is_array()) return;
    std::map<std::string, size_t> first_index;
    int64_t total = 0;
    for (size_t i = 0; i < spec.tasks.size(); ++i) {
      const TaskGroupSpec& g = spec.tasks[i];
      total += std::max(g.replicas, g.max_replicas);
      if (g.role.empty()) continue;  // missing or invalid: reported already
      std::string path = IndexPath("tasks", i);
      auto [it, inserted] = first_index.emplace(g.role, i);
      if (!inserted) {
        Error(ChildPath(path, "role"),
              fmt::format("\"{}\" is already the role of tasks[{}]", g.role, it->second));
      }
      if (g.elastic() && spec.framework == Framework::kTensorFlow) {
        Error(ChildPath(path, "replicas"),
              "TensorFlow's TF_CONFIG lists a fixed cluster: elastic replicas need framework "
              "pytorch (with torchrun) or none");
      }
      if (g.elastic() && (spec.framework == Framework::kMpi || spec.framework == Framework::kJax ||
                          spec.framework == Framework::kDeepSpeed)) {
        Error(ChildPath(path, "replicas"),
              fmt::format("framework {} needs a fixed number of processes: elastic replicas need "
                          "framework pytorch (with torchrun) or none",
                          FrameworkName(spec.framework)));
      }
      if (spec.framework == Framework::kMpi) {
        if (!Contains(kMpiRoles, g.role)) {
          Error(ChildPath(path, "role"),
                fmt::format("\"{}\" is not a role of an MPI job; use launcher (one task that "
                            "runs mpirun) and worker (the tasks the ranks run in)",
                            g.role));
        } else if (g.role == "launcher" && g.replicas != 1) {
          Error(ChildPath(path, "replicas"),
                fmt::format("an MPI job has 1 launcher, got {}", g.replicas));
        }
      }
      if (spec.framework == Framework::kSlurm) SlurmGroupChecks(g, path);
      if (spec.framework == Framework::kTensorFlow) {
        if (!Contains(kTensorFlowRoles, g.role)) {
          Error(ChildPath(path, "role"),
                fmt::format("\"{}\" is not a TensorFlow role; use chief, worker, ps or evaluator",
                            g.role));
        } else if ((g.role == "chief" || g.role == "evaluator") && g.replicas > 1) {
          Error(ChildPath(path, "replicas"),
                fmt::format("a TensorFlow {} has 1 replica, got {}", g.role, g.replicas));
        }
      }
    }
    if (spec.framework == Framework::kMpi) {
      for (std::string_view role : kMpiRoles) {
        if (!first_index.contains(std::string(role))) {
          Error("tasks", fmt::format("an MPI job needs a task group with role {} (launcher runs "
                                     "mpirun, worker holds the ranks)",
                                     role));
        }
      }
    }
    SlurmChecks(spec);
    SessionChecks(spec);
    if (total > kMaxTasks) {
      Error("tasks",
            fmt::format("the job has {} tasks in all; at most {} are allowed", total, kMaxTasks));
    }
    for (auto& problem : JobSizeProblems(spec)) errors_.push_back(std::move(problem));
  }

  // A Slurm job is an allocation of nodes (docs/slurm.md): one group of `node` tasks, one per
  // machine, fixed in number.
  void SlurmGroupChecks(const TaskGroupSpec& g, const std::string& path) {
    if (g.role != "node") {
      Error(ChildPath(path, "role"),
            fmt::format("\"{}\" is not the role of a Slurm job; its one task group is node, a "
                        "task per node of the allocation",
                        g.role));
    }
    if (g.elastic()) {
      Error(ChildPath(path, "replicas"),
            "a Slurm job's nodes are fixed in number: --nodes MIN-MAX takes the minimum");
    }
  }

  void SlurmChecks(const JobSpec& spec) {
    if (spec.framework != Framework::kSlurm) {
      if (spec.slurm) {
        Error("slurm", fmt::format("is for jobs of framework slurm (cohort sbatch), not {}",
                                   FrameworkName(spec.framework)));
      }
      return;
    }
    if (!spec.slurm) Error("slurm", "required field is missing: a Slurm job's batch script");
    if (spec.tasks.size() > 1) {
      Error("tasks",
            fmt::format("a Slurm job has one task group (node), got {}", spec.tasks.size()));
    }
    if (spec.tasks.empty() || !spec.slurm) return;
    const auto& counts = spec.slurm->tasks_per_node;
    if (!counts.empty() && static_cast<int>(counts.size()) != spec.tasks[0].replicas) {
      Error("slurm.tasks_per_node",
            fmt::format("lists {} nodes; the job has {} (tasks[0].replicas)", counts.size(),
                        spec.tasks[0].replicas));
    }
  }

  // A session is one task on one node that people reach interactively: one group of one
  // replica, of no framework, run once.
  void SessionChecks(const JobSpec& spec) {
    if (!spec.session) return;
    if (spec.framework != Framework::kNone) {
      Error("session", fmt::format("a session is a task of its own, not one of framework {}",
                                   FrameworkName(spec.framework)));
    }
    if (spec.tasks.size() > 1) {
      Error("tasks", fmt::format("a session has one task group, got {}", spec.tasks.size()));
    }
    if (!spec.tasks.empty() && (spec.tasks[0].replicas != 1 || spec.tasks[0].elastic())) {
      Error("tasks[0].replicas", "a session has one task: 1");
    }
    if (spec.array) Error("array", "a session is one job, not an array");
  }

  // Runs a units parser; a throw from inside it (std::stod on absurd input) becomes `fallback`.
  template <typename F>
  static auto Guarded(F&& f, const std::string& fallback) -> decltype(f()) {
    try {
      return f();
    } catch (const std::exception&) {
      return Status::InvalidArgument(fallback);
    }
  }

  std::vector<std::string> errors_;
  Framework framework_ = Framework::kNone;  // the job's, once read: some checks depend on it
  bool session_ = false;                    // the job is a session (its `session` section)
  std::string base_dir_;  // relative workdirs are taken relative to it; empty: kept relative
};

StatusOr<JobSpec> Validate(const Json& doc, std::vector<std::string> errors,
                           std::string_view prefix, const std::string& base_dir = "",
                           bool* names_team = nullptr) {
  if (names_team) *names_team = doc.is_object() && doc.contains("team");
  Validator validator(std::move(errors), base_dir);
  JobSpec spec = validator.Job(doc);
  std::vector<std::string>& found = validator.errors();
  if (found.empty()) return spec;
  size_t n = found.size();
  return Status::InvalidArgument(
      fmt::format("{}job spec has {} error{}", prefix, n, n == 1 ? "" : "s"), std::move(found));
}

}  // namespace

std::string SpecTooLarge(uint64_t bytes) { return SpecTooLarge(bytes, kDefaultSource); }

StatusOr<JobSpec> ParseJobSpec(std::string_view text, std::string_view source, bool* names_team) {
  return ParseJobSpecFile(text, source, "", names_team);
}

StatusOr<JobSpec> ParseJobSpecFile(std::string_view text, std::string_view source,
                                   const std::string& base_dir, bool* names_team) {
  std::string prefix = source == kDefaultSource ? "" : fmt::format("{}: ", source);
  auto read = ReadSpecDocument(text, source, kDefaultSource);
  if (!read.ok()) return read.status();
  try {
    return Validate(read->doc, std::move(read->errors), prefix, base_dir, names_team);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(
        fmt::format("{}: cannot read the job spec: {}", source, JsonErrorText(e)));
  }
}

StatusOr<JobSpec> ParseJobSpecJson(const Json& doc) {
  try {
    return Validate(doc, {}, "");
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("cannot read the job spec: {}", JsonErrorText(e)));
  }
}

namespace {

Json RestartJson(const RestartPolicy& r) {
  Json on = Json::array();
  for (RestartCause c : r.on) on.push_back(RestartCauseName(c));
  Json out{{"max_attempts", r.max_attempts},
           {"on", std::move(on)},
           {"backoff", DurationText(r.backoff)},
           {"max_backoff", DurationText(r.max_backoff)}};
  // Only when set, so that the canonical form of every other spec stays as it was.
  if (r.fence) out["fence"] = true;
  return out;
}

}  // namespace

Json ToJson(const JobSpec& spec) {
  Json tasks = Json::array();
  for (const auto& g : spec.tasks) {
    const int64_t milli = g.resources.milli_cpus;
    Json cpus = milli % 1000 == 0 ? Json(milli / 1000) : Json(static_cast<double>(milli) / 1000.0);
    Json group = {{"role", g.role},
                  {"replicas", g.elastic() ? Json{{"min", g.replicas}, {"max", g.max_replicas}}
                                           : Json(g.replicas)},
                  {"resources",
                   {{"gpus", g.resources.gpus},
                    {"cpus", cpus},
                    {"memory", FormatByteSize(g.resources.memory_bytes)}}},
                  {"command", g.command}};
    if (!g.env.empty() || !g.env_secrets.empty()) {
      Json env = Json::object();
      for (const auto& [var, value] : g.env) env[var] = value;
      for (const auto& [var, secret] : g.env_secrets) env[var] = Json{{"secret", secret}};
      group["env"] = std::move(env);
    }
    if (!g.workdir.empty()) group["workdir"] = g.workdir;
    // Only when set, so that the canonical form of every other spec stays as it was.
    if (g.distinct_nodes) group["distinct_nodes"] = true;
    if (!g.image.empty()) group["image"] = g.image;
    tasks.push_back(std::move(group));
  }
  const bool named = spec.priority == kPriorityLow || spec.priority == kPriorityNormal ||
                     spec.priority == kPriorityHigh;
  Json priority = named ? Json(PriorityName(spec.priority)) : Json(spec.priority);
  Json doc = {{"name", spec.name},
              {"team", spec.team},
              {"priority", priority},
              {"framework", FrameworkName(spec.framework)},
              {"tasks", std::move(tasks)},
              {"restart", RestartJson(spec.restart)},
              {"grace_period", DurationText(spec.grace_period)}};
  if (spec.max_runtime) doc["max_runtime"] = DurationText(*spec.max_runtime);
  if (!spec.constraints.empty()) {
    Json constraints = Json::object();
    if (!spec.constraints.gpu_model.empty()) constraints["gpu_model"] = spec.constraints.gpu_model;
    if (!spec.constraints.labels.empty()) constraints["labels"] = spec.constraints.labels;
    doc["constraints"] = std::move(constraints);
  }
  if (!spec.datasets.empty()) {
    Json datasets = Json::array();
    for (const auto& ref : spec.datasets) datasets.push_back(FormatDatasetRef(ref));
    doc["datasets"] = std::move(datasets);
  }
  if (!spec.context.empty()) doc["context"] = spec.context;
  if (spec.array) {
    Json array = {{"indices", FormatArrayIndices(spec.array->indices)}};
    if (spec.array->max_parallel > 0) array["max_parallel"] = spec.array->max_parallel;
    doc["array"] = std::move(array);
  }
  if (!spec.depends_on.empty()) {
    Json depends = Json::array();
    for (const auto& d : spec.depends_on) {
      depends.push_back({{"job", d.job}, {"on", DependencyConditionName(d.on)}});
    }
    doc["depends_on"] = std::move(depends);
  }
  if (spec.slurm) doc["slurm"] = ToJson(*spec.slurm);
  if (spec.session) doc["session"] = ToJson(*spec.session);
  return doc;
}

std::string SpecDigest(const JobSpec& spec) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : ToJson(spec).dump()) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return fmt::format("{:016x}", hash);
}

}  // namespace cohort
