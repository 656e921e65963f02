// cohortd: the Cohort daemons. `cohortd master` runs the API server, the scheduler and the state
// store; `cohortd agent` runs on every machine with GPUs; `cohortd run-task` is the per-task
// supervisor that agents start (not meant to be run by hand); `cohortd cert` makes the
// certificates for HTTPS; `cohortd backup` copies a master's databases.
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include "cohortd/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"cohortd: the Cohort master and agent daemons"};
  app.set_version_flag("--version", COHORT_VERSION);
  app.require_subcommand(1);
  cohort::cohortd::MasterOptions master;
  cohort::cohortd::AgentOptions agent;
  cohort::cohortd::CertOptions cert;
  cohort::cohortd::BackupOptions backup;
  std::string task_dir;
  cohort::cohortd::AddMasterCommand(app, master);
  cohort::cohortd::AddAgentCommand(app, agent);
  cohort::cohortd::AddCertCommand(app, cert);
  cohort::cohortd::AddBackupCommand(app, backup);
  auto* run_task = app.add_subcommand(
      "run-task", "Supervise one task (started by the agent; not meant to be run by hand)");
  run_task->add_option("--task-dir", task_dir, "The task's directory, holding spec.json")
      ->required();
  CLI11_PARSE(app, argc, argv);
  if (app.got_subcommand("master")) return cohort::cohortd::RunMaster(master);
  if (app.got_subcommand("agent")) return cohort::cohortd::RunAgent(agent);
  if (app.got_subcommand("cert")) return 0;  // its subcommands ran in their callbacks
  if (app.got_subcommand("backup")) return cohort::cohortd::RunBackup(backup);
  return cohort::cohortd::RunTask(task_dir);
}
