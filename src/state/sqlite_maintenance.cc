#include "state/sqlite_maintenance.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/strings.h"
#include "common/units.h"

namespace cohort::state {
namespace {

// A connection closed whatever happens.
class Connection {
 public:
  Status Open(const std::string& path, int flags) {
    int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
      return Status::Internal(
          fmt::format("opening {}: {}", path, db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc)));
    }
    sqlite3_busy_timeout(db_, 5000);
    return Status::Ok();
  }
  ~Connection() { sqlite3_close_v2(db_); }
  sqlite3* get() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

int StopAtDeadline(void* deadline) {
  return std::chrono::steady_clock::now() >
         *static_cast<std::chrono::steady_clock::time_point*>(deadline);
}

}  // namespace

Status CheckDatabaseIntegrity(const std::string& path, Duration limit) {
  Connection db;
  COHORT_RETURN_IF_ERROR(db.Open(path, SQLITE_OPEN_READONLY));
  auto deadline = std::chrono::steady_clock::now() + limit;
  sqlite3_progress_handler(db.get(), 10'000, StopAtDeadline, &deadline);
  sqlite3_stmt* check = nullptr;
  if (sqlite3_prepare_v2(db.get(), "PRAGMA quick_check(5)", -1, &check, nullptr) != SQLITE_OK) {
    // A file that is not a database at all fails here.
    return Status::Internal(
        fmt::format("{} is not a usable SQLite database: {}", path, sqlite3_errmsg(db.get())));
  }
  std::vector<std::string> problems;
  int rc;
  while ((rc = sqlite3_step(check)) == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(check, 0);
    std::string line = text ? reinterpret_cast<const char*>(text) : "";
    if (line != "ok") problems.push_back(line);
  }
  std::string error = sqlite3_errmsg(db.get());
  sqlite3_finalize(check);
  if (rc == SQLITE_INTERRUPT) {
    return Status::DeadlineExceeded(fmt::format(
        "the integrity check of {} did not finish within {}", path, FormatDuration(limit)));
  }
  if (rc != SQLITE_DONE) problems.push_back(error);
  if (!problems.empty()) {
    return Status::Internal(
        fmt::format("{} fails SQLite's integrity check: {}", path, Join(problems, "; ")));
  }
  return Status::Ok();
}

Status BackupDatabase(const std::string& from, const std::string& to) {
  Connection source;
  COHORT_RETURN_IF_ERROR(source.Open(from, SQLITE_OPEN_READONLY));
  std::string partial = to + ".partial";
  std::remove(partial.c_str());
  {
    Connection copy;
    COHORT_RETURN_IF_ERROR(copy.Open(partial, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    sqlite3_backup* backup = sqlite3_backup_init(copy.get(), "main", source.get(), "main");
    if (!backup) {
      return Status::Internal(fmt::format("backing up {}: {}", from, sqlite3_errmsg(copy.get())));
    }
    int rc;
    // All pages at once: a copy of a few hundred MB takes seconds, and a write to the source
    // meanwhile makes SQLite start again, so steps of everything finish soonest.
    while ((rc = sqlite3_backup_step(backup, -1)) == SQLITE_BUSY || rc == SQLITE_LOCKED) {
      sqlite3_sleep(50);
    }
    sqlite3_backup_finish(backup);
    if (rc != SQLITE_DONE) {
      std::remove(partial.c_str());
      return Status::Internal(
          fmt::format("backing up {} to {}: {}", from, to, sqlite3_errmsg(copy.get())));
    }
  }  // closed: the copy is whole on disk (SQLite syncs a rollback-journal database's commit)
  if (std::rename(partial.c_str(), to.c_str()) != 0) {
    std::remove(partial.c_str());
    return Status::Internal(fmt::format("renaming {} to {}: {}", partial, to, strerror(errno)));
  }
  return Status::Ok();
}

}  // namespace cohort::state
