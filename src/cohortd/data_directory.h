// What a master's data directory must show before the master trusts it (docs/reliability.md,
// "Backup and restore"): an earlier cluster's traces come with its database, and the database
// passes SQLite's integrity check. A lost or damaged database never silently becomes a new,
// empty cluster.
#pragma once

#include <string>

#include "common/status.h"
#include "common/time.h"

namespace cohort::cohortd {

// How long the integrity check at start may take; a larger database starts without it finished
// (with a warning).
inline constexpr Duration kIntegrityCheckLimit = std::chrono::seconds(10);

// kFailedPrecondition, saying how to restore, when the directory (or the storage root) shows an
// earlier cluster but has no cohort.db, unless `init` (the admin asked for a new cluster); or
// when `init` is asked of a directory that has a database. kInternal when the database fails
// SQLite's integrity check.
Status CheckDataDirectory(const std::string& data_dir, const std::string& storage_root, bool init);

// `cohortd backup`: consistent copies of the state and metric databases of a master's data
// directory, running or not, into `to_dir` (made if need be).
Status BackUpDataDirectory(const std::string& data_dir, const std::string& to_dir);

}  // namespace cohort::cohortd
