// A job's outputs outlive the machine it ran on (docs/data.md, "Outputs"): once a task has
// ended, and its GPUs are free, the agent uploads the job's output directory to the object store
// in the background, under jobs/<job>/outputs/. Each upload is durable state of the agent's own,
// one file per upload in <data dir>/uploads: the files the directory held when it began (listed
// once, never through a symbolic link: store/file_tree.h), how many of them are in the store,
// and its state. A restarted agent resumes where the last one stopped; a store that is down is
// retried with backoff, without end; what the store refuses for good ends the upload failed,
// with the reason. The master hears of each upload's progress in the agent's reports and
// decides whether it may begin (a team's store quota): an upload waits for that.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "model/store_access.h"
#include "model/upload_progress.h"
#include "store/file_tree.h"
#include "store/object_store.h"

namespace cohort::agent {

struct UploadRequest {
  std::string id;          // the agent's name for it (a task id): its state file's name
  std::string source_dir;  // what is uploaded
  std::string prefix;      // the keys: <prefix>/<path>
  StoreAccess store = {};  // from the master, with its word that the upload may begin
};

struct UploadLimits {
  size_t max_files = 100'000;  // per upload; more fails it, naming the limit
  Duration first_backoff = std::chrono::seconds(1);
  Duration max_backoff = std::chrono::minutes(5);
  // Progress is saved at least this often (and at every change of state): a restarted agent
  // sends again at most what was sent since.
  Duration save_every = std::chrono::seconds(1);
};

using StoreOpener =
    std::function<StatusOr<std::unique_ptr<store::ObjectStore>>(const StoreAccess& access)>;

// Thread-safe: one thread steps the uploads while another reports them and applies the
// master's word; a file being sent holds no lock.
class ArtifactUploads {
 public:
  // `dir` holds one state file per upload (made 0700 by Load: they hold store credentials).
  ArtifactUploads(std::string dir, const Clock& clock, StoreOpener open_store,
                  UploadLimits limits = {});

  // Reads back the uploads an earlier agent left in `dir`. kInternal if `dir` is unusable; a
  // state file that cannot be read is set aside (renamed *.bad) and logged, not fatal.
  Status Load();
  // Lists the directory and saves the upload as waiting. Idempotent: an id already known is
  // left as it is. An empty directory, or none, is no upload at all: the master never hears of
  // it, and the job's `artifacts` stay null.
  Status Begin(const UploadRequest& request);
  // The master's word: it may begin, reaching the store as `access` says (a master may say it
  // again, with fresh credentials: they replace the old), or it fails with `reason` (e.g. over
  // its team's quota).
  void Allow(const std::string& id, const StoreAccess& access);
  void Refuse(const std::string& id, const std::string& reason);
  // Sends one file of the first upload that may go on now; returns true if more work is there
  // at once (false: nothing to do, or everything waits for a backoff or the master). One
  // thread at a time.
  bool Step();
  std::vector<UploadProgress> Progress() const;
  std::optional<UploadProgress> ProgressOf(const std::string& id) const;
  // The master has recorded the upload's end: its state file goes.
  void Forget(const std::string& id);

 private:
  struct Upload {
    UploadRequest request;
    std::vector<store::TreeFile> files;
    UploadProgress progress;
    Duration backoff{};
    std::shared_ptr<store::ObjectStore> store;  // opened at its first file
  };
  // These require mu_.
  Status Save(const Upload& upload);
  void SaveOrLog(Upload& upload);
  void Fail(Upload& upload, std::string reason);
  void Retry(Upload& upload, const Status& why);
  // The next file of `upload` is sent (`sent`, of `size` bytes) or left out (`left_out`).
  void Record(Upload& upload, const Status& sent, int64_t size, bool left_out);
  std::string PathOf(const std::string& id) const;
  bool Ready(const UploadProgress& p, Timestamp now) const;

  std::string dir_;
  const Clock& clock_;
  StoreOpener open_store_;
  UploadLimits limits_;
  mutable std::mutex mu_;
  std::map<std::string, Upload> uploads_;
  std::map<std::string, MonoTime> saved_at_;
};

}  // namespace cohort::agent
