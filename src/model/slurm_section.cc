#include "model/slurm_section.h"

#include <fmt/format.h>

#include <array>
#include <limits>
#include <string_view>

#include "common/units.h"
#include "model/json.h"
#include "model/limits.h"
#include "model/spec_fields.h"

namespace cohort {
namespace {

constexpr std::array<std::string_view, 26> kFields = {
    "script",        "script_name",     "args",          "job_name",     "tasks_per_node",
    "tasks_asked",   "ntasks_per_node", "cpus_per_task", "cpus_per_gpu", "gpus",
    "gpus_per_node", "gpus_per_task",   "mem_per_node",  "mem_per_cpu",  "mem_per_gpu",
    "submit_dir",    "submit_host",     "partition",     "account",      "qos",
    "array_step",    "output",          "error",         "input",        "open_mode",
    "signal"};
constexpr std::array<std::string_view, 3> kSignalFields = {"number", "before_end", "batch_only"};

// Reads each field of the section, naming it in every problem.
class SectionReader {
 public:
  explicit SectionReader(std::vector<std::string>& errors) : errors_(errors) {}

  void Error(std::string_view field, std::string_view reason) {
    errors_.push_back(fmt::format("slurm.{}: {}", field, reason));
  }

  bool Text(const Json& v, std::string_view field, size_t max, std::string* out) {
    if (!v.is_string()) {
      Error(field, fmt::format("must be a string, got {}", DescribeSpecValue(v)));
      return false;
    }
    const auto& s = v.get_ref<const std::string&>();
    if (s.size() > max) {
      Error(field, fmt::format("is {} bytes; at most {} are allowed", s.size(), max));
      return false;
    }
    if (s.find('\0') != std::string::npos) {
      Error(field, "must not hold a NUL character");
      return false;
    }
    *out = s;
    return true;
  }

  void OptionalText(const Json& v, std::string_view field, std::optional<std::string>* out) {
    std::string s;
    if (Text(v, field, kMaxSlurmTextLength, &s)) *out = std::move(s);
  }

  bool Integer(const Json& v, std::string_view field, int64_t min, int64_t max, int64_t* out) {
    if (!v.is_number_integer()) {
      Error(field, fmt::format("must be an integer, got {}", DescribeSpecValue(v)));
      return false;
    }
    const int64_t n =
        v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(max) ? max + 1 : v.get<int64_t>();
    if (n < min || n > max) {
      Error(field, fmt::format("must be from {} to {}, got {}", min, max, DescribeSpecValue(v)));
      return false;
    }
    *out = n;
    return true;
  }

  template <typename T>
  void OptionalInteger(const Json& v, std::string_view field, int64_t min, int64_t max,
                       std::optional<T>* out) {
    int64_t n = 0;
    if (Integer(v, field, min, max, &n)) *out = static_cast<T>(n);
  }

  bool Bool(const Json& v, std::string_view field, bool* out) {
    if (!v.is_boolean()) {
      Error(field, fmt::format("must be true or false, got {}", DescribeSpecValue(v)));
      return false;
    }
    *out = v.get<bool>();
    return true;
  }

  void Script(const Json& v, SlurmSection* out) {
    if (!Text(v, "script", kMaxSlurmJobScriptBytes, &out->script)) return;
    // As sbatch: the kernel runs the script, so its first line names the interpreter.
    if (out->script.rfind("#!", 0) != 0) {
      Error("script", "must start with a \"#!\" line naming its interpreter, as sbatch requires");
    }
  }

  void Args(const Json& v, SlurmSection* out) {
    if (!v.is_array()) {
      Error("args", fmt::format("must be a list of strings, got {}", DescribeSpecValue(v)));
      return;
    }
    if (v.size() > kMaxCommandArgs) {
      Error("args",
            fmt::format("has {} arguments; at most {} are allowed", v.size(), kMaxCommandArgs));
      return;
    }
    size_t bytes = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      std::string arg;
      if (!Text(v[i], fmt::format("args[{}]", i), kMaxCommandBytes, &arg)) return;
      bytes += arg.size();
      out->args.push_back(std::move(arg));
    }
    if (bytes > kMaxCommandBytes) {
      Error("args",
            fmt::format("are {} bytes together; at most {} are allowed", bytes, kMaxCommandBytes));
    }
  }

  void TasksPerNode(const Json& v, SlurmSection* out) {
    if (!v.is_array() || v.empty()) {
      Error("tasks_per_node",
            fmt::format("must be a list of counts, one per node, got {}", DescribeSpecValue(v)));
      return;
    }
    if (v.size() > static_cast<size_t>(kMaxTasks)) {
      Error("tasks_per_node",
            fmt::format("lists {} nodes; a job has at most {} tasks", v.size(), kMaxTasks));
      return;
    }
    for (size_t i = 0; i < v.size(); ++i) {
      int64_t n = 0;
      if (!Integer(v[i], fmt::format("tasks_per_node[{}]", i), 1, 65536, &n)) return;
      out->tasks_per_node.push_back(static_cast<int>(n));
    }
  }

  void SubmitDir(const Json& v, SlurmSection* out) {
    if (!Text(v, "submit_dir", kMaxWorkdirLength, &out->submit_dir)) return;
    if (out->submit_dir.empty() || out->submit_dir[0] != '/') {
      Error("submit_dir", fmt::format("must be an absolute path, got {}", DescribeSpecValue(v)));
    }
  }

  void OpenMode(const Json& v, SlurmSection* out) {
    if (v == "append") {
      out->append = true;
    } else if (v != "truncate") {
      Error("open_mode", fmt::format("must be append or truncate, got {}", DescribeSpecValue(v)));
    }
  }

  void Signal(const Json& v, SlurmSection* out) {
    if (!v.is_object()) {
      Error("signal", fmt::format("must be a mapping with number, before_end and batch_only, "
                                  "got {}",
                                  DescribeSpecValue(v)));
      return;
    }
    for (const auto& [key, value] : v.items()) {
      if (std::find(kSignalFields.begin(), kSignalFields.end(), key) == kSignalFields.end()) {
        Error("signal." + key, "unknown field; " + UnknownFieldHint(key, kSignalFields));
      }
    }
    SlurmSignal signal;
    int64_t number = 0;
    if (auto it = v.find("number"); it == v.end()) {
      Error("signal.number", "required field is missing");
      return;
    } else if (!Integer(*it, "signal.number", 1, 64, &number)) {
      return;
    }
    signal.number = static_cast<int>(number);
    if (auto it = v.find("before_end"); it != v.end()) {
      auto d = it->is_string() ? ParseDuration(it->get_ref<const std::string&>())
                               : StatusOr<Duration>(Status::InvalidArgument(""));
      if (!d.ok() || *d < Duration::zero() || *d > std::chrono::seconds(65535) ||
          *d % std::chrono::seconds(1) != Duration::zero()) {
        Error("signal.before_end",
              fmt::format("must be whole seconds from 0s to 65535s, e.g. 60s, got {}",
                          DescribeSpecValue(*it)));
        return;
      }
      signal.before_end = *d;
    }
    if (auto it = v.find("batch_only"); it != v.end()) {
      if (!Bool(*it, "signal.batch_only", &signal.batch_only)) return;
    }
    out->signal = signal;
  }

 private:
  std::vector<std::string>& errors_;
};

}  // namespace

SlurmSection ParseSlurmSection(const Json& v, std::vector<std::string>& errors) {
  SlurmSection out;
  SectionReader r(errors);
  if (!v.is_object()) {
    errors.push_back(
        fmt::format("slurm: must be a mapping with script and the job's Slurm "
                    "settings, got {}",
                    DescribeSpecValue(v)));
    return out;
  }
  for (const auto& [key, value] : v.items()) {
    if (std::find(kFields.begin(), kFields.end(), key) == kFields.end()) {
      r.Error(key, "unknown field; " + UnknownFieldHint(key, kFields));
    }
  }
  constexpr int64_t kMaxCount = 1 << 20;
  constexpr int64_t kMaxBytes = std::numeric_limits<int64_t>::max() / 1024;
  if (auto it = v.find("script"); it != v.end()) {
    r.Script(*it, &out);
  } else {
    r.Error("script", "required field is missing");
  }
  for (const auto& [key, value] : v.items()) {
    if (key == "script_name") r.Text(value, key, kMaxWorkdirLength, &out.script_name);
    if (key == "args") r.Args(value, &out);
    if (key == "job_name") r.Text(value, key, kMaxSlurmTextLength, &out.job_name);
    if (key == "tasks_per_node") r.TasksPerNode(value, &out);
    if (key == "tasks_asked") r.Bool(value, key, &out.tasks_asked);
    if (key == "ntasks_per_node") r.OptionalInteger(value, key, 1, kMaxCount, &out.ntasks_per_node);
    if (key == "cpus_per_task") r.OptionalInteger(value, key, 1, kMaxCount, &out.cpus_per_task);
    if (key == "cpus_per_gpu") r.OptionalInteger(value, key, 1, kMaxCount, &out.cpus_per_gpu);
    if (key == "gpus") r.OptionalText(value, key, &out.gpus);
    if (key == "gpus_per_node") r.OptionalText(value, key, &out.gpus_per_node);
    if (key == "gpus_per_task") r.OptionalText(value, key, &out.gpus_per_task);
    if (key == "mem_per_node") r.OptionalInteger(value, key, 0, kMaxBytes, &out.mem_per_node);
    if (key == "mem_per_cpu") r.OptionalInteger(value, key, 0, kMaxBytes, &out.mem_per_cpu);
    if (key == "mem_per_gpu") r.OptionalInteger(value, key, 0, kMaxBytes, &out.mem_per_gpu);
    if (key == "submit_dir") r.SubmitDir(value, &out);
    if (key == "submit_host") r.Text(value, key, kMaxAddressLength, &out.submit_host);
    if (key == "partition") r.Text(value, key, kMaxSlurmTextLength, &out.partition);
    if (key == "account") r.Text(value, key, kMaxSlurmTextLength, &out.account);
    if (key == "qos") r.Text(value, key, kMaxSlurmTextLength, &out.qos);
    if (key == "array_step") {
      int64_t n = 0;
      if (r.Integer(value, key, 1, kMaxCount, &n)) out.array_step = static_cast<int>(n);
    }
    if (key == "output") r.Text(value, key, kMaxWorkdirLength, &out.output);
    if (key == "error") r.Text(value, key, kMaxWorkdirLength, &out.error);
    if (key == "input") r.Text(value, key, kMaxWorkdirLength, &out.input);
    if (key == "open_mode") r.OpenMode(value, &out);
    if (key == "signal") r.Signal(value, &out);
  }
  if (out.output.empty()) r.Error("output", "must name a file (a pattern such as slurm-%j.out)");
  return out;
}

Json ToJson(const SlurmSection& s) {
  Json out = {{"script", s.script},
              {"script_name", s.script_name},
              {"args", s.args},
              {"job_name", s.job_name},
              {"tasks_asked", s.tasks_asked},
              {"submit_dir", s.submit_dir},
              {"submit_host", s.submit_host},
              {"array_step", s.array_step},
              {"output", s.output},
              {"open_mode", s.append ? "append" : "truncate"}};
  if (!s.tasks_per_node.empty()) out["tasks_per_node"] = s.tasks_per_node;
  if (s.ntasks_per_node) out["ntasks_per_node"] = *s.ntasks_per_node;
  if (s.cpus_per_task) out["cpus_per_task"] = *s.cpus_per_task;
  if (s.cpus_per_gpu) out["cpus_per_gpu"] = *s.cpus_per_gpu;
  if (s.gpus) out["gpus"] = *s.gpus;
  if (s.gpus_per_node) out["gpus_per_node"] = *s.gpus_per_node;
  if (s.gpus_per_task) out["gpus_per_task"] = *s.gpus_per_task;
  if (s.mem_per_node) out["mem_per_node"] = *s.mem_per_node;
  if (s.mem_per_cpu) out["mem_per_cpu"] = *s.mem_per_cpu;
  if (s.mem_per_gpu) out["mem_per_gpu"] = *s.mem_per_gpu;
  if (!s.partition.empty()) out["partition"] = s.partition;
  if (!s.account.empty()) out["account"] = s.account;
  if (!s.qos.empty()) out["qos"] = s.qos;
  if (!s.error.empty()) out["error"] = s.error;
  if (!s.input.empty()) out["input"] = s.input;
  if (s.signal) {
    out["signal"] = {
        {"number", s.signal->number},
        {"before_end",
         fmt::format(
             "{}s",
             std::chrono::duration_cast<std::chrono::seconds>(s.signal->before_end).count())},
        {"batch_only", s.signal->batch_only}};
  }
  return out;
}

}  // namespace cohort
