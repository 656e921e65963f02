// A disk for SQLite databases in tests, that fills up, crashes the writer at an exact write, or
// loses power: a SQLite VFS wrapped around the real one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace cohort::testing {

// While a FaultVfs lives it is SQLite's default VFS, so every database opened meanwhile
// (OpenSqliteStateStore's included, with no change to the store) reads and writes through it;
// it forwards everything to the VFS that was the default before (the OS's), except what it was
// told to break. One at a time; its knobs are not thread-safe.
class FaultVfs {
 public:
  FaultVfs();
  // The previous default VFS comes back. Close every database opened through this one first.
  ~FaultVfs();
  FaultVfs(const FaultVfs&) = delete;
  FaultVfs& operator=(const FaultVfs&) = delete;

  // The disk holds `bytes` in all of the files written through this VFS (database files and
  // their write-ahead logs, whether open now or not; the shared-memory index is memory). A write
  // that needs more fails as ENOSPC makes the OS's VFS fail, with SQLITE_FULL, and writes
  // nothing. Negative: no limit, the default.
  void SetCapacity(int64_t bytes);
  // What those files hold now.
  int64_t BytesUsed() const;

  // Called before every write and every sync of a file, with how many there have been since the
  // hook was set, this one included. A crash test raises SIGKILL in it to die at an exact point
  // of a transaction.
  void SetBeforeWrite(std::function<void(int64_t count)> hook);

  // Keeps, beside each file, a copy of the file as of its last sync (`<file>.synced`), written
  // atomically, so that after the writing process has died PowerCut can tell what a power cut
  // at that moment would have left.
  void KeepSyncedCopies(bool keep);

  // Turns the database at `path` (and its journal and write-ahead log) into what a power cut
  // would have left of it if it was written with KeepSyncedCopies: each file as of its last
  // sync, a file never synced gone, the shared-memory index gone. One possible power cut: a
  // real one may also keep some writes made after the last sync.
  static void PowerCut(const std::string& path);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort::testing
