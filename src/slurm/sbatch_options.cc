#include "slurm/sbatch_options.h"

#include <fmt/format.h>

#include <map>

#include "common/strings.h"
#include "slurm/sbatch_option_table.h"

namespace cohort::slurm {
namespace {

// Values are shown in messages up to this long: a --wrap command may be pages.
constexpr size_t kShownValueBytes = 80;

std::string Shown(std::string_view value) {
  if (value.size() <= kShownValueBytes) return std::string(value);
  return std::string(value.substr(0, kShownValueBytes)) + "...";
}

class Parser {
 public:
  explicit Parser(const std::vector<SbatchArgument>& args) : args_(args) {}

  StatusOr<SbatchParse> Run() {
    for (next_ = 0; next_ < args_.size();) {
      const SbatchArgument& arg = args_[next_++];
      if (!parse_.operands.empty() || options_ended_) {
        Operand(arg);
      } else if (arg.text == "--") {
        options_ended_ = true;
      } else if (arg.text.starts_with("--")) {
        Long(arg);
      } else if (arg.text.size() > 1 && arg.text[0] == '-') {
        Short(arg);
      } else {
        Operand(arg);
      }
    }
    CheckExclusive({"mem", "mem-per-cpu", "mem-per-gpu"});
    CheckExclusive({"cpus-per-task", "cpus-per-gpu"});
    // --gres=none asks for no GPUs: it does not clash with --gpus-per-node (nor in Slurm).
    if (parse_.options.gres_gpus && parse_.options.gres_gpus->count == 0) given_.erase("gres");
    CheckExclusive({"gpus-per-node", "gres"});
    if (errors_.empty()) return std::move(parse_);
    std::string message = errors_.size() == 1 ? errors_[0] : Join(errors_, "; ");
    return Status::InvalidArgument(std::move(message), errors_);
  }

 private:
  void Long(const SbatchArgument& arg) {
    const std::string_view text = std::string_view(arg.text).substr(2);
    const size_t equals = text.find('=');
    const std::string_view name = text.substr(0, equals);
    std::optional<std::string_view> value;
    if (equals != std::string_view::npos) value = text.substr(equals + 1);

    const SbatchOptionSpec* spec = FindLongOption(name);
    if (!spec) return UnknownLong(arg, name, value);
    if (spec->argument == OptionArgument::kNone && value) {
      return Error(arg.origin, fmt::format("--{} takes no value", name));
    }
    if (spec->argument == OptionArgument::kRequired && !value) {
      if (next_ == args_.size()) {
        return Error(arg.origin, fmt::format("--{} needs a value", name));
      }
      value = args_[next_++].text;  // as getopt: whatever follows, even "-x"
    }
    const std::string written =
        value ? fmt::format("--{}={}", name, Shown(*value)) : fmt::format("--{}", name);
    Handle(*spec, value.value_or(""), arg.origin, written);
  }

  // An option sbatch does not have, or one cut short ("--job" for --job-name).
  void UnknownLong(const SbatchArgument& arg, std::string_view name,
                   std::optional<std::string_view> value) {
    if (const auto names = LongOptionsStartingWith(name); !name.empty() && !names.empty()) {
      std::vector<std::string> options;
      for (std::string_view n : names) options.push_back(fmt::format("--{}", n));
      return Error(arg.origin, fmt::format("--{} is short for {}; write the option in full", name,
                                           Join(options, " or ")));
    }
    std::string written = fmt::format("--{}", name);
    if (value) {
      written += fmt::format("={}", Shown(*value));
    } else if (!arg.origin.command_line() && next_ < args_.size() &&
               args_[next_].origin == arg.origin && !args_[next_].text.starts_with("-")) {
      // On an #SBATCH line, what follows an unknown option is its value: the line holds
      // options only. (On the command line it may be the script: it stays an operand.)
      written += " " + Shown(args_[next_++].text);
    }
    parse_.unknown.push_back({std::move(written), arg.origin, ""});
  }

  // "-N2", "-N 2", "-WQ": flags may share one dash; an option with a value ends the group.
  void Short(const SbatchArgument& arg) {
    const std::string& text = arg.text;
    for (size_t i = 1; i < text.size(); ++i) {
      const SbatchOptionSpec* spec = FindShortOption(text[i]);
      if (!spec) {
        parse_.unknown.push_back({"-" + text.substr(i), arg.origin, ""});
        return;
      }
      if (spec->argument != OptionArgument::kRequired) {
        Handle(*spec, "", arg.origin, fmt::format("-{}", text[i]));
        continue;
      }
      std::string value = text.substr(i + 1);
      if (value.empty()) {
        if (next_ == args_.size()) {
          return Error(arg.origin, fmt::format("-{} (--{}) needs a value", text[i], spec->name));
        }
        value = args_[next_++].text;
      }
      Handle(*spec, value, arg.origin, fmt::format("-{} {}", text[i], Shown(value)));
      return;
    }
  }

  void Operand(const SbatchArgument& arg) {
    if (arg.origin.command_line()) {
      parse_.operands.push_back(arg.text);
      return;
    }
    Error(arg.origin, fmt::format("\"{}\" is not an option (Slurm refuses such a directive too)",
                                  Shown(arg.text)));
  }

  void Handle(const SbatchOptionSpec& spec, std::string_view value, Origin origin,
              const std::string& written) {
    switch (spec.handling) {
      case OptionHandling::kUnsupported:
        parse_.unknown.push_back({written, origin, std::string(spec.note)});
        return;
      case OptionHandling::kIgnore:
        parse_.warnings.push_back(
            fmt::format("{}: {}: ignored: {}", origin.ToString(), written, spec.note));
        return;
      case OptionHandling::kApply:
        break;
    }
    if (spec.name == "wrap" && !origin.command_line()) {
      return Error(origin, "--wrap is for the command line: it stands for the script itself");
    }
    if (Status applied = spec.apply(value, parse_.options); !applied.ok()) {
      return Error(origin, fmt::format("{}: {}", written, applied.message()));
    }
    given_[std::string(spec.name)] = origin;
    if (!spec.note.empty()) {
      parse_.warnings.push_back(fmt::format("{}: {}: {}", origin.ToString(), written, spec.note));
    }
  }

  // Slurm refuses options that ask for one thing in two ways, given together.
  void CheckExclusive(const std::vector<std::string>& names) {
    std::vector<std::string> given;
    for (const std::string& name : names) {
      if (auto it = given_.find(name); it != given_.end()) {
        given.push_back(fmt::format("--{} ({})", name, it->second.ToString()));
      }
    }
    if (given.size() > 1) {
      errors_.push_back(
          fmt::format("{} are mutually exclusive, as in Slurm; give one", Join(given, " and ")));
    }
  }

  void Error(Origin origin, const std::string& what) {
    errors_.push_back(fmt::format("{}: {}", origin.ToString(), what));
  }

  const std::vector<SbatchArgument>& args_;
  size_t next_ = 0;
  bool options_ended_ = false;
  SbatchParse parse_;
  std::map<std::string, Origin> given_;  // each applied option's long name: where, last
  std::vector<std::string> errors_;
};

// `a` unless `b` holds a value.
template <typename T>
void Override(std::optional<T>& a, const std::optional<T>& b) {
  if (b) a = b;
}

}  // namespace

std::string Origin::ToString() const {
  if (!variable.empty()) return "$" + variable;
  return command_line() ? "command line" : fmt::format("line {}", line);
}

StatusOr<SbatchParse> ParseSbatchArguments(const std::vector<std::string>& args, Origin origin) {
  std::vector<SbatchArgument> located;
  for (const std::string& arg : args) located.push_back({arg, origin});
  return ParseSbatchArguments(located);
}

StatusOr<SbatchParse> ParseSbatchArguments(const std::vector<SbatchArgument>& args) {
  return Parser(args).Run();
}

StatusOr<SbatchParse> ParseScriptDirectives(const BatchScript& script) {
  std::vector<SbatchArgument> args;
  for (const BatchDirective& directive : script.directives) {
    for (const std::string& text : directive.arguments) {
      args.push_back({text, Origin::ScriptLine(directive.line)});
    }
  }
  COHORT_ASSIGN_OR_RETURN(SbatchParse parse, ParseSbatchArguments(args));
  parse.warnings.insert(parse.warnings.begin(), script.warnings.begin(), script.warnings.end());
  return parse;
}

SbatchParse MergeSbatchOptions(const SbatchParse& script, const SbatchParse& command_line) {
  SbatchParse merged = script;
  SbatchOptions& o = merged.options;
  const SbatchOptions& c = command_line.options;
  // One request each, whichever option the command line uses for it.
  if (c.mem || c.mem_per_cpu || c.mem_per_gpu) {
    o.mem = c.mem;
    o.mem_per_cpu = c.mem_per_cpu;
    o.mem_per_gpu = c.mem_per_gpu;
  }
  if (c.gpus_per_node || c.gres_gpus) {
    o.gpus_per_node = c.gpus_per_node;
    o.gres_gpus = c.gres_gpus;
  }
  if (c.cpus_per_task || c.cpus_per_gpu) {
    o.cpus_per_task = c.cpus_per_task;
    o.cpus_per_gpu = c.cpus_per_gpu;
  }
  if (c.array) {
    o.array = c.array;
    o.array_text = c.array_text;
  }
  Override(o.job_name, c.job_name);
  Override(o.output, c.output);
  Override(o.error, c.error);
  Override(o.input, c.input);
  Override(o.open_mode, c.open_mode);
  Override(o.chdir, c.chdir);
  Override(o.export_env, c.export_env);
  Override(o.comment, c.comment);
  Override(o.wrap, c.wrap);
  Override(o.nodes, c.nodes);
  Override(o.ntasks, c.ntasks);
  Override(o.ntasks_per_node, c.ntasks_per_node);
  Override(o.gpus, c.gpus);
  Override(o.gpus_per_task, c.gpus_per_task);
  Override(o.time, c.time);
  Override(o.exclusive, c.exclusive);
  Override(o.constraint, c.constraint);
  Override(o.partition, c.partition);
  Override(o.qos, c.qos);
  Override(o.account, c.account);
  Override(o.dependency, c.dependency);
  Override(o.kill_on_invalid_dep, c.kill_on_invalid_dep);
  Override(o.requeue, c.requeue);
  Override(o.signal, c.signal);
  Override(o.mail_type, c.mail_type);
  Override(o.mail_user, c.mail_user);
  o.wait = o.wait || c.wait;
  o.parsable = o.parsable || c.parsable;
  o.quiet = o.quiet || c.quiet;

  merged.unknown.insert(merged.unknown.end(), command_line.unknown.begin(),
                        command_line.unknown.end());
  merged.warnings.insert(merged.warnings.end(), command_line.warnings.begin(),
                         command_line.warnings.end());
  merged.operands = command_line.operands;
  return merged;
}

StatusOr<std::vector<std::string>> CheckUnknown(const SbatchParse& parse, bool ignore_unknown) {
  std::vector<std::string> listed;
  for (const UnknownOption& unknown : parse.unknown) {
    std::string item = fmt::format("{}: {}", unknown.origin.ToString(), unknown.option);
    if (!unknown.reason.empty()) item += fmt::format(" ({})", unknown.reason);
    listed.push_back(std::move(item));
  }
  if (listed.empty()) return listed;
  if (ignore_unknown) {
    for (std::string& item : listed) item += ": ignored (--ignore-unknown)";
    return listed;
  }
  return Status::InvalidArgument(
      fmt::format("unknown or unsupported sbatch options: {}; use --ignore-unknown to run anyway",
                  Join(listed, ", ")),
      listed);
}

}  // namespace cohort::slurm
