// A directory kept in the store as snapshots (docs/data.md, "Checkpoints"): each file's content
// once, as a blob named by its SHA-256 (<prefix>/blobs/<hash>), and a manifest
// (<prefix>/manifest.json) naming every file's path, size and hash, written last. A reader sees
// the last whole snapshot or none: never a mix of two, nor a file half sent, whatever happened to
// the writer. A push sends only the files whose content the store does not hold yet, then
// deletes the blobs only the snapshot it replaced named.
//
// What a job's checkpoints are between its attempts: the attempt that wrote them pushes its
// checkpoint directory; the next attempt, on any machine, pulls the last snapshot into its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "os/credentials.h"
#include "store/object_store.h"

namespace cohort::store {

inline constexpr size_t kMaxSnapshotFiles = 100'000;
inline constexpr size_t kMaxManifestBytes = 64 << 20;

struct SnapshotFile {
  std::string path;  // relative, a valid key
  int64_t size = 0;
  std::string sha256;
  // The modification time the writer saw: a later push hashes the file again only if it moved.
  int64_t mtime_ns = 0;
};

struct Snapshot {
  std::vector<SnapshotFile> files;  // in path order
  int64_t bytes = 0;
  // Who took it: the job's attempt, and the step it last reported (cohort-checkpoint step=N).
  int attempt = 0;
  std::optional<int64_t> step;
  Timestamp taken_at;
};

std::string ManifestKey(const std::string& prefix);
std::string BlobKey(const std::string& prefix, const std::string& sha256);

// The last snapshot under `prefix`, or none yet. kFailedPrecondition for a manifest that is not
// one.
StatusOr<std::optional<Snapshot>> ReadSnapshot(ObjectStore& store, const std::string& prefix);

// What a push of `dir` would send, from the files' sizes and modification times alone (nothing
// is read): the cost that decides when to push.
struct SnapshotPlan {
  std::vector<SnapshotFile> files;  // a sha256 is empty where the file must be hashed again
  int64_t bytes_to_send = 0;        // of the files whose content may be new
  // A file is new, changed or gone since `previous` (an empty directory with none: no change).
  bool changed = false;
  size_t skipped = 0;  // links, devices and the like, left out
};
StatusOr<SnapshotPlan> PlanSnapshot(const std::string& dir, const Snapshot* previous,
                                    size_t max_files = kMaxSnapshotFiles);

// Sends what `plan` found new and writes the manifest. `previous` is the snapshot it replaces
// (none: the first). kUnavailable if a file changed while it was sent: nothing is replaced, and a
// later push tries again.
StatusOr<Snapshot> PushSnapshot(ObjectStore& store, const std::string& prefix,
                                const std::string& dir, const SnapshotPlan& plan,
                                const Snapshot* previous, int attempt, std::optional<int64_t> step,
                                Timestamp now);

struct PullCounts {
  size_t files_fetched = 0;
  int64_t bytes_fetched = 0;
  size_t files_kept = 0;  // already in `dir` with the same content
};
// Makes `dir` hold every file of `snapshot`, each checked against its hash; files of `dir` that
// the snapshot does not name are left. Each file is fetched into `staging` (private to the
// caller, on the file system of `dir`) and moved into place without following a link
// (MoveBeneath), given to `owner` when set. kFailedPrecondition if a blob is missing or not what
// its name says.
StatusOr<PullCounts> PullSnapshot(ObjectStore& store, const std::string& prefix,
                                  const Snapshot& snapshot, const std::string& dir,
                                  const std::string& staging, std::optional<Owner> owner);

}  // namespace cohort::store
