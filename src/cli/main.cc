// cohort: the command-line tool for Cohort users and admins.
#include <CLI/CLI.hpp>
#include <csignal>

#include "cli/cli.h"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{
      "cohort: submit, follow and manage jobs on a Cohort GPU cluster\n"
      "The master is --master URL, else $COHORT_MASTER, else http://127.0.0.1:7420; an "
      "https:// master's certificate must be signed by --ca-file, else by a CA the system "
      "trusts."};
  app.set_version_flag("--version", COHORT_VERSION);
  app.require_subcommand(1);
  cohort::cli::GlobalOptions global;
  app.add_option("--master", global.master, "URL of the Cohort master")->envname("COHORT_MASTER");
  app.add_option("--token", global.token,
                 "API token (default: $COHORT_TOKEN, else the one `cohort login` saved)")
      ->envname("COHORT_TOKEN");
  app.add_option("--ca-file", global.ca_file,
                 "CA certificate (PEM) that an https:// master's certificate is signed by, e.g. "
                 "the cluster's ca.crt (cohortd cert ca)")
      ->envname("COHORT_CA_FILE");
  cohort::cli::AddClusterCommands(app, global);
  cohort::cli::AddJobCommands(app, global);
  cohort::cli::AddSbatchCommand(app, global);
  cohort::cli::AddShellCommand(app, global);
  cohort::cli::AddNotebookCommand(app, global);
  cohort::cli::AddArtifactCommands(app, global);
  cohort::cli::AddNodeCommands(app, global);
  cohort::cli::AddTeamCommands(app, global);
  cohort::cli::AddAuthCommands(app, global);
  cohort::cli::AddDashboardCommand(app, global);
  cohort::cli::AddAccountingCommands(app, global);
  cohort::cli::AddMetricCommands(app, global);
  cohort::cli::AddTopCommand(app, global);
  cohort::cli::AddSecretCommands(app, global);
  cohort::cli::AddSweepCommands(app, global);
  cohort::cli::AddDataCommands(app, global);
  cohort::cli::AddSimCommands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}
