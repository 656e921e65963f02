// Looking after a database file from outside its store: SQLite's own integrity check, bounded in
// time, before a master trusts the file; and a consistent copy of it while a master writes to it
// (docs/reliability.md, "Backup and restore").
#pragma once

#include <string>

#include "common/status.h"
#include "common/time.h"

namespace cohort::state {

// Runs SQLite's quick_check on the file (read only). Ok when it passes; kInternal naming the first
// problems it found; kDeadlineExceeded when it did not finish within `limit` (a very large file:
// the caller decides whether to go on without it).
Status CheckDatabaseIntegrity(const std::string& path, Duration limit);

// Copies the database at `from` to `to` with SQLite's online backup: a consistent snapshot even
// while another process writes to it (the copy waits out a writer's lock, and starts again if the
// file changed under it). The copy is written beside `to` and renamed into place once whole.
Status BackupDatabase(const std::string& from, const std::string& to);

}  // namespace cohort::state
