#include "state/sqlite_db.h"

#include <errno.h>
#include <fmt/format.h>

namespace cohort::state {

void BindOptional(Statement& st, int i, const std::optional<int64_t>& v) {
  if (v) {
    st.Bind(i, *v);
  } else {
    st.BindNull(i);
  }
}

void BindOptional(Statement& st, int i, const std::optional<Timestamp>& v) {
  BindOptional(st, i, v ? std::optional<int64_t>(ToMicros(*v)) : std::nullopt);
}

Status SqliteError(const SqliteFile& file, const std::string& what, const std::string& message) {
  int code = sqlite3_extended_errcode(file.db);
  int os_error = sqlite3_system_errno(file.db);
  bool full = (code & 0xff) == SQLITE_FULL ||
              ((code & 0xff) == SQLITE_IOERR &&
               (os_error == ENOSPC || os_error == EDQUOT || os_error == EFBIG));
  if (full) {
    return Status::ResourceExhausted(fmt::format(
        "{}'s disk is full: {}: {}: {}; free space there (until then nothing new is stored; "
        "what was stored before is kept)",
        file.name, file.path, what, message));
  }
  return Status::Internal(fmt::format("sqlite: {}: {}: {}", file.path, what, message));
}

Status SqliteExec(const SqliteFile& file, const char* sql, const std::string& what) {
  char* err = nullptr;
  int rc = sqlite3_exec(file.db, sql, nullptr, nullptr, &err);
  std::string message = err ? err : sqlite3_errmsg(file.db);
  sqlite3_free(err);
  if (rc == SQLITE_OK) return Status::Ok();
  return SqliteError(file, what, message);
}

Status SqliteRollBackIfFailed(const SqliteFile& file, Status s) {
  if (s.ok() || sqlite3_get_autocommit(file.db)) return s;
  Status rollback = SqliteExec(file, "ROLLBACK", "rolling back");
  if (!rollback.ok() && !sqlite3_get_autocommit(file.db)) {
    return Status::Internal(fmt::format("{}; then {}", s.message(), rollback.message()));
  }
  return s;
}

StatusOr<sqlite3*> SqliteOpenWal(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Status::Internal(fmt::format("opening {}: {}", path, message));
  }
  // A file system that cannot hold a WAL leaves the old mode in place without an error.
  std::string mode;
  {
    Statement wal(db, "PRAGMA journal_mode=WAL");
    if (wal.prepared() && wal.Step() == SQLITE_ROW) mode = wal.Text(0);
  }
  if (mode != "wal") {
    Status s = mode.empty() ? SqliteError(SqliteFile{db, path, "the database"},
                                          "turning on the write-ahead log")
                            : Status::FailedPrecondition(fmt::format(
                                  "{}: cannot keep a write-ahead log there (journal mode stays "
                                  "{}); put the data directory on a local file system",
                                  path, mode));
    sqlite3_close(db);
    return s;
  }
  sqlite3_busy_timeout(db, 5000);
  return db;
}

}  // namespace cohort::state
