// What the SQLite stores share (the state database, the metric database): a prepared statement,
// and errors that tell a full disk apart, since that is the one failure an admin can fix.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "common/time.h"

namespace cohort::state {

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool prepared() const { return rc_ == SQLITE_OK; }
  // For the next row of an insert: the statement runs again with new values.
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  void Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void BindDouble(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void Bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void BindNull(int i) { sqlite3_bind_null(stmt_, i); }
  int Step() { return sqlite3_step(stmt_); }
  bool IsNull(int col) { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  int64_t Int(int col) { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) { return sqlite3_column_double(stmt_, col); }
  std::string Text(int col) {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

void BindOptional(Statement& st, int i, const std::optional<int64_t>& v);
void BindOptional(Statement& st, int i, const std::optional<Timestamp>& v);

// A database file: the handle, where it is, and what users call it ("the state database").
struct SqliteFile {
  sqlite3* db = nullptr;
  std::string path;
  std::string name;
};

// The status for a failed call (what `what` was doing): kResourceExhausted when the disk is
// full, naming the file and what to do; kInternal otherwise.
// SQLite says SQLITE_FULL where the OS refused a write for lack of space part way, but an I/O
// error where it refused it outright, with the OS's errno kept aside.
Status SqliteError(const SqliteFile& file, const std::string& what, const std::string& message);
inline Status SqliteError(const SqliteFile& file, const std::string& what) {
  return SqliteError(file, what, sqlite3_errmsg(file.db));
}
Status SqliteExec(const SqliteFile& file, const char* sql, const std::string& what);
// After a failure inside a transaction, makes sure none is left open: one left open would
// refuse every later BEGIN, so the store would never take a write again even once the disk has
// room. SQLite rolls back by itself after some errors (SQLITE_FULL, I/O errors), not after
// others.
Status SqliteRollBackIfFailed(const SqliteFile& file, Status s);
// Opens (creating) a database file for one thread's use, in WAL mode; names the file on error.
// The caller closes it.
StatusOr<sqlite3*> SqliteOpenWal(const std::string& path);

}  // namespace cohort::state
