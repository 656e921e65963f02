// The node's cache of datasets (docs/data.md, "Datasets"): one copy of each version that tasks on
// this node read, shared by every job, bounded in bytes; the least recently used go first, never
// one in use. Each task's supervisor fetches what its task names before the task starts, and
// holds it while the task runs; no one else has to be asked, so it works with or without an
// agent running:
//
//   <cache>/                                 0711, root's: reached, never listed, by accounts
//   <cache>/locks/<id>                       a task that reads the version holds a shared lock
//                                            on it for its life; fetching and evicting take it
//                                            exclusively
//   <cache>/versions/<id>-<bytes>-<token>/   the version's files: 0555 directories, 0444 files,
//                                            root's. The random token makes the path a secret
//                                            of the tasks given it (versions/ is 0711)
//   <cache>/staging/                         fetches under way, 0700
//
// <id> is the first 32 hex digits of the SHA-256 of the version's manifest key. The last use of
// a version is its directory's modification time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "store/object_store.h"

namespace cohort::agent {

class DatasetCache {
 public:
  DatasetCache(std::string dir, int64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}

  // A version in use: its path, held until the holder closes `lock_fd` (or ends).
  struct Held {
    std::string path;
    int lock_fd = -1;
    int64_t bytes = 0;
    bool fetched = false;  // from the store now, rather than found here
  };
  // The version whose manifest is at `manifest_key`: found here, or fetched from `store` (every
  // chunk checked against its hash) while other tasks that want it wait. Its lock is held shared
  // on return; the caller keeps `lock_fd` open for as long as its task may read the files.
  // `progress` is told the bytes fetched so far, and of how many, while it fetches.
  using Progress = std::function<void(int64_t done, int64_t total)>;
  StatusOr<Held> Acquire(store::ObjectStore& store, const std::string& manifest_key,
                         const Progress& progress = {});

  // Evicts versions that no task holds, least recently used first, until they take at most the
  // bound (or none is left to evict), and fetches that were left half done. Returns the bytes
  // evicted.
  StatusOr<int64_t> Trim();

  // The bytes of the versions kept.
  StatusOr<int64_t> Bytes() const;
  // The ids of the versions kept whole (store::DatasetCacheId), most recently used first, at
  // most `most` of them.
  StatusOr<std::vector<std::string>> Ids(size_t most) const;

  const std::string& dir() const { return dir_; }

 private:
  Status Prepare() const;
  std::string LockPath(const std::string& id) const;
  // The directory name of a complete version with this id, if there is one.
  StatusOr<std::string> Find(const std::string& id) const;

  std::string dir_;
  int64_t max_bytes_;
};

}  // namespace cohort::agent
