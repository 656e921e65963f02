// cohort sbatch: a Slurm batch script as a Cohort job (docs/slurm.md). The script's #SBATCH lines
// and the command line's options, the latter winning, become a job of framework slurm
// (slurm/sbatch_job.h, slurm/slurm_job.h); the master runs the script on the job's first node with
// srun and scontrol on its PATH.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "cli/cli.h"
#include "model/job_spec_parser.h"
#include "model/slurm_section.h"
#include "slurm/batch_script.h"
#include "slurm/sbatch_environment.h"
#include "slurm/sbatch_job.h"
#include "slurm/sbatch_options.h"
#include "slurm/slurm_job.h"

extern char** environ;

namespace cohort::cli {
namespace {

constexpr const char* kHelp =
    "Run a Slurm batch script as a Cohort job, as sbatch would (docs/slurm.md)\n"
    "Usage: cohort [--master URL] sbatch [SBATCH OPTIONS] [--ignore-unknown] [--dry-run] "
    "SCRIPT [ARGS...]\n"
    "\n"
    "The script's #SBATCH lines and the options here (which win, as in Slurm) say what the job\n"
    "needs: --job-name, --nodes, --ntasks, --ntasks-per-node, --gpus, --gpus-per-node,\n"
    "--gpus-per-task, --gres=gpu:N, --cpus-per-task, --mem, --time, --output, --error, --array,\n"
    "--partition (the team), --qos (the priority), --dependency, --requeue, --signal and more.\n"
    "The script runs once on the job's first node, in the directory sbatch ran in (--chdir),\n"
    "with the SLURM_* variables; srun inside it starts the step's tasks on every node, and\n"
    "`scontrol show hostnames` lists them. Its output goes to slurm-%j.out (--output) and to\n"
    "`cohort logs JOB`.\n"
    "\n"
    "Cohort's options:\n"
    "  --ignore-unknown  run even with options Cohort does not know or honour, warning of each\n"
    "                    (without it they are listed in one error and nothing is submitted)\n"
    "  --dry-run         print the job spec that would be submitted (JSON), and submit nothing\n"
    "sbatch's own:\n"
    "  --parsable        print only the job's id\n"
    "  -W, --wait        return when the job ends: exit 0 if it succeeded\n"
    "  -Q, --quiet       no warnings and no \"Submitted batch job\" line\n"
    "sbatch's input variables (SBATCH_PARTITION, SBATCH_TIMELIMIT, ...) count as options between\n"
    "the script's and the command line's.\n"
    "Without SCRIPT (or with -), the script is read from standard input; --wrap=COMMAND makes\n"
    "one that runs COMMAND with /bin/sh.\n";

// Options of Cohort's own among sbatch's: sbatch does not know them, so the parse lists them
// with the unknown ones, where they are taken out again.
constexpr std::string_view kIgnoreUnknown = "--ignore-unknown";
constexpr std::string_view kDryRun = "--dry-run";

struct Script {
  slurm::SbatchScriptInfo info;
  std::string text;
};

StatusOr<std::string> ReadScriptText(const std::string& path) {
  std::string text;
  const size_t limit = kMaxSlurmJobScriptBytes + 1;
  if (path == "-") {
    text.resize(limit);
    size_t got = std::fread(text.data(), 1, limit, stdin);
    text.resize(got);
  } else {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      return Status::InvalidArgument(fmt::format("{}: is a directory, not a batch script", path));
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return Status::NotFound(
          fmt::format("cannot read the batch script {}: {}", path, std::strerror(errno)));
    }
    text.resize(limit);
    in.read(text.data(), static_cast<std::streamsize>(limit));
    text.resize(static_cast<size_t>(in.gcount()));
  }
  if (text.size() > kMaxSlurmJobScriptBytes) {
    return Status::InvalidArgument(
        fmt::format("{}: the batch script is over {} KiB, the most a Cohort job carries; keep "
                    "the work in files the script runs",
                    path == "-" ? "standard input" : path, kMaxSlurmJobScriptBytes / 1024));
  }
  return text;
}

StatusOr<Script> ReadScript(const slurm::SbatchParse& command_line) {
  Script script;
  std::error_code ec;
  script.info.submit_dir = std::filesystem::current_path(ec).string();
  if (ec) return Status::Unavailable("cannot tell the current directory: " + ec.message());
  const auto& operands = command_line.operands;
  if (command_line.options.wrap) {
    if (!operands.empty()) {
      return Status::InvalidArgument(
          fmt::format("--wrap stands for the script; \"{}\" cannot be given with it", operands[0]));
    }
    script.info.path = "wrap";
    script.info.name = "wrap";
    script.text =
        fmt::format("#!/bin/sh\n# This script was created by cohort sbatch --wrap.\n\n{}\n",
                    *command_line.options.wrap);
    return script;
  }
  script.info.path = operands.empty() ? "-" : operands[0];
  if (operands.size() > 1) script.info.args.assign(operands.begin() + 1, operands.end());
  script.info.name = script.info.path == "-"
                         ? "sbatch"
                         : std::filesystem::path(script.info.path).filename().string();
  COHORT_ASSIGN_OR_RETURN(script.text, ReadScriptText(script.info.path));
  return script;
}

std::map<std::string, std::string> SubmitterEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry = *e;
    size_t eq = entry.find('=');
    if (eq != std::string_view::npos) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

int RunSbatch(const GlobalOptions& g, const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--") break;
    if (a == "-h" || a == "--help" || a == "--usage") {
      fmt::print("{}", kHelp);
      return 0;
    }
    if (!a.starts_with('-')) break;
  }
  auto command_line = slurm::ParseSbatchArguments(args, slurm::Origin::CommandLine());
  if (!command_line.ok()) return Fail("sbatch", command_line.status());
  bool ignore_unknown = false;
  bool dry_run = false;
  std::erase_if(command_line->unknown, [&](const slurm::UnknownOption& u) {
    if (!u.origin.command_line()) return false;
    if (u.option == kIgnoreUnknown) ignore_unknown = true;
    if (u.option == kDryRun) dry_run = true;
    return u.option == kIgnoreUnknown || u.option == kDryRun;
  });
  auto script = ReadScript(*command_line);
  if (!script.ok()) return Fail("sbatch", script.status());
  auto read = slurm::ReadBatchScript(script->text);
  if (!read.ok()) {
    return Fail("sbatch", Status::InvalidArgument(
                              fmt::format("{}: {}", script->info.path, read.status().message()),
                              read.status().details()));
  }
  auto directives = slurm::ParseScriptDirectives(*read);
  if (!directives.ok()) {
    return Fail("sbatch", Status::InvalidArgument(fmt::format("{}: {}", script->info.path,
                                                              directives.status().message()),
                                                  directives.status().details()));
  }
  // SBATCH_* variables stand between the script and the command line, as in Slurm.
  const std::map<std::string, std::string> submit_env = SubmitterEnvironment();
  auto variables = slurm::ParseSbatchEnvironment(submit_env);
  if (!variables.ok()) return Fail("sbatch", variables.status());
  slurm::SbatchParse merged =
      slurm::MergeSbatchOptions(slurm::MergeSbatchOptions(*directives, *variables), *command_line);
  script->info.interpreter = read->interpreter;
  auto unknown_warnings = slurm::CheckUnknown(merged, ignore_unknown);
  if (!unknown_warnings.ok()) return Fail("sbatch", unknown_warnings.status());
  auto job = slurm::SbatchToJob(merged.options, script->info);
  if (!job.ok()) return Fail("sbatch", job.status());
  const bool quiet = merged.options.quiet;
  if (!quiet) {
    for (const auto* list : {&merged.warnings, &*unknown_warnings, &job->warnings}) {
      for (const auto& w : *list) fmt::print(stderr, "cohort sbatch: warning: {}\n", w);
    }
  }
  SlurmSection section =
      slurm::SlurmSectionOf(*job, script->info, std::move(script->text), HostName());
  JobSpec spec = slurm::SlurmJobSpec(*job, std::move(section), submit_env);
  Json doc = ToJson(spec);
  // With no --partition, the master puts the job in the submitter's team, as `cohort run`.
  if (!job->names_team) doc.erase("team");
  if (auto parsed = ParseJobSpecJson(doc); !parsed.ok()) return Fail("sbatch", parsed.status());
  if (dry_run) {
    fmt::print("{}\n", doc.dump(2));
    return 0;
  }
  auto c = Connect(g);
  if (!c.ok()) return Fail("sbatch", c.status());
  auto submitted = (*c)->Submit(doc.dump(), "");
  if (!submitted.ok()) return Fail("sbatch", submitted.status());
  if (merged.options.parsable) {
    fmt::print("{}\n", submitted->id);
  } else if (!quiet) {
    fmt::print("Submitted batch job {}\n", submitted->id);
  }
  std::fflush(stdout);
  if (!merged.options.wait) return 0;
  auto end = WaitForJobEnd(**c, submitted->id, 0);
  if (!end.ok()) return Fail("sbatch", end.status());
  if (end->state == JobState::kSucceeded) return 0;
  // As sbatch --wait: the batch script's exit code when it has one.
  for (const auto& t : end->tasks) {
    if (t.rank == 0 && t.exit_code && *t.exit_code != 0) return *t.exit_code;
  }
  return 1;
}

}  // namespace

void AddSbatchCommand(CLI::App& app, GlobalOptions& g) {
  auto args = std::make_shared<std::vector<std::string>>();
  auto* s = app.add_subcommand("sbatch",
                               "Run a Slurm batch script as a job: cohort sbatch "
                               "[SBATCH OPTIONS] script.sh [ARGS...]");
  // sbatch's options are sbatch's to read (slurm/sbatch_options.h), --help included.
  s->set_help_flag();
  s->prefix_command();
  s->allow_extras();
  s->callback([&g, s, args] {
    *args = s->remaining();
    Finish(RunSbatch(g, *args));
  });
}

}  // namespace cohort::cli
