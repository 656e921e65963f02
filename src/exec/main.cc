// cohort-exec: the exec service of an MPI job's workers and its client, which mpirun's remote
// launch calls in place of ssh (exec/exec_service.h, exec/exec_client.h; docs/job-spec.md, "MPI").
// The agent puts it first on the PATH of the tasks that use it.
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "exec/exec_client.h"
#include "exec/exec_service.h"
#include "exec/slurm_batch.h"
#include "exec/srun.h"

namespace {

constexpr const char* kUsage =
    "Usage:\n"
    "  cohort-exec NAME COMMAND [ARGS...]\n"
    "      Run COMMAND (its words joined by spaces, run by /bin/sh) inside the task of this job\n"
    "      named NAME (a line of $COHORT_MPI_HOSTFILE, e.g. cohort-job12-worker-0), as ssh would "
    "on a\n"
    "      host. Its output goes to that task's log; the exit status is the command's (255 when\n"
    "      it could not run). Needs $COHORT_JOB_CREDENTIAL and $COHORT_EXEC_ENDPOINTS, which\n"
    "      Cohort gives the tasks of MPI jobs. ssh's -x, -T, -n and -q are accepted and ignored.\n"
    "  cohort-exec serve [--port PORT] [-- COMMAND [ARGS...]]\n"
    "      Serve such commands on PORT ($COHORT_TASK_PORT by default), running COMMAND beside\n"
    "      (the service ends with it, with its status), or until stopped. The agent runs this as\n"
    "      the command of an MPI job's workers.\n"
    "  cohort-exec batch [-- ARGS...]\n"
    "      Run the batch script of a Slurm job that `cohort sbatch` started, with ARGS, as\n"
    "      slurmstepd would: by the interpreter its \"#!\" line names, its output into the\n"
    "      job's --output (and --error) file and this task's log, --signal sent when due, and\n"
    "      SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2 and SIGCONT passed on to it. The exit\n"
    "      status is the script's. Reads $COHORT_SLURM_SCRIPT, $COHORT_SLURM_OUTPUT,\n"
    "      $COHORT_SLURM_ERROR, $COHORT_SLURM_INPUT, $COHORT_SLURM_OPEN_MODE and\n"
    "      $COHORT_SLURM_SIGNAL, which Cohort sets; the agent runs it beside `serve` on the\n"
    "      job's first node.\n";

int Usage(const char* why) {
  fmt::print(stderr, "cohort-exec: {}\n{}", why, kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // The same binary is srun and scontrol in a Slurm job's task tools (tools/slurm/).
  std::string_view program = argv[0];
  program =
      program.substr(program.rfind('/') == std::string_view::npos ? 0 : program.rfind('/') + 1);
  if (program == "srun") return cohort::exec::RunSrun(args);
  if (program == "scontrol") return cohort::exec::RunScontrol(args);
  if (args.empty()) return Usage("name a task and a command, or serve, or batch");
  if (args[0] == "--help" || args[0] == "-h") {
    fmt::print("{}", kUsage);
    return 0;
  }
  if (args[0] == "serve") {
    cohort::exec::ServeOptions options;
    size_t i = 1;
    for (; i < args.size(); ++i) {
      if (args[i] == "--") {
        ++i;
        break;
      }
      if (args[i] == "--port" && i + 1 < args.size()) {
        options.port = std::atoi(args[++i].c_str());
        if (options.port <= 0 || options.port > 65535) return Usage("--port: not a port");
        continue;
      }
      return Usage(fmt::format("serve: unknown argument \"{}\"", args[i]).c_str());
    }
    options.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
    return cohort::exec::Serve(options);
  }
  if (args[0] == "batch") {
    // `batch -- ARGS`: everything after "--" is the script's, even words that look like options.
    size_t first = 1;
    if (first < args.size() && args[first] == "--") {
      ++first;
    } else if (first < args.size()) {
      return Usage(fmt::format("batch: unknown argument \"{}\"; the script's arguments go after "
                               "\"--\"",
                               args[first])
                       .c_str());
    }
    return cohort::exec::BatchMain(
        std::vector<std::string>(args.begin() + static_cast<std::ptrdiff_t>(first), args.end()));
  }
  cohort::exec::RunOptions options;
  size_t i = 0;
  // ssh's flags that a remote launcher may pass: none changes what Cohort does.
  while (i < args.size() &&
         (args[i] == "-x" || args[i] == "-T" || args[i] == "-n" || args[i] == "-q")) {
    ++i;
  }
  if (i >= args.size()) return Usage("name a task and a command");
  if (args[i][0] == '-') return Usage(fmt::format("unknown option \"{}\"", args[i]).c_str());
  options.name = args[i++];
  options.words.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (options.words.empty())
    return Usage(fmt::format("{}: no command to run", options.name).c_str());
  return cohort::exec::RunRemote(options);
}
