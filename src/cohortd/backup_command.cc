// cohortd backup: consistent copies of a master's databases, while it runs (docs/reliability.md,
// "Backup and restore").
#include <fmt/format.h>

#include "cohortd/commands.h"
#include "cohortd/data_directory.h"

namespace cohort::cohortd {

void AddBackupCommand(CLI::App& app, BackupOptions& o) {
  auto* cmd = app.add_subcommand(
      "backup",
      "Copy a master's state and metric databases, consistently, while it runs (restore: copy "
      "them back into its data directory while it is stopped)");
  cmd->add_option("--data-dir", o.data_dir, "The master's data directory (default: its default)");
  cmd->add_option("--to", o.to_dir, "The directory the copies go to (made if need be)")->required();
}

int RunBackup(const BackupOptions& o) {
  std::string data_dir = o.data_dir.empty() ? DefaultDataDir("master") : o.data_dir;
  if (Status s = BackUpDataDirectory(data_dir, o.to_dir); !s.ok()) {
    fmt::print(stderr, "cohortd backup: {}\n", s.message());
    return 1;
  }
  fmt::print("backed up the databases of {} to {}\n", data_dir, o.to_dir);
  return 0;
}

}  // namespace cohort::cohortd
