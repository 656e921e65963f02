// A job's checkpoints follow it from machine to machine (docs/data.md, "Checkpoints"). Each
// task's supervisor does it, around the task's life, with the task's job directory on its node
// and the store the master names:
//
//   - Before the task starts, from its job's second attempt on, the last snapshot of the job's
//     checkpoints (store/snapshot.h) is pulled into the checkpoint directory, and what was
//     restored is written to <task dir>/restored.json for the agent to report (`cohort status`
//     shows it). A store that cannot be reached is tried again until `restore_limit`; then the
//     task fails with the reason, and the job's restart rules decide.
//   - While the task runs, the first task of the job (rank 0) pushes the directory when it has
//     changed and then stayed as it is for one look (a file being written changes between
//     looks), or when the task reported a new step (cohort-checkpoint step=N, which the agent
//     writes to <task dir>/checkpoint-step). A push of at most `prompt_bytes` of new content
//     goes at once; a larger one at most every `large_every`.
//   - When the task has ended, unless it succeeded on its own (exit 0 without being stopped: a
//     preempted task that checkpoints in its SIGTERM handler and exits 0 has not), one last
//     push, within `final_limit`: the
//     next attempt must start from the newest checkpoint, so its GPUs wait for that much.
//
// The store's access is read from <task dir>/store.json before each use: the agent rewrites it
// when the master renews short-lived credentials.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/status.h"
#include "common/time.h"
#include "model/json.h"
#include "model/store_access.h"
#include "os/credentials.h"
#include "store/object_store.h"
#include "store/snapshot.h"

namespace cohort::agent {

inline constexpr char kStoreAccessFile[] = "store.json";
inline constexpr char kCheckpointStepFile[] = "checkpoint-step";
inline constexpr char kRestoredFile[] = "restored.json";

// spec.json's "checkpoints".
struct CheckpointSyncSpec {
  std::string dir;  // the job's checkpoint directory on this node
  std::string key;  // the job's checkpoints in the store: "jobs/7/checkpoints"
  int attempt = 0;  // the task's: what its pushes say they come from
  bool restore = false;
  bool push = false;
  int64_t prompt_bytes = 64 << 20;
  Duration large_every = std::chrono::minutes(5);
  Duration final_limit = std::chrono::minutes(2);
  Duration look = std::chrono::seconds(2);
  Duration restore_limit = std::chrono::minutes(10);
};
Json ToJson(const CheckpointSyncSpec& spec);
StatusOr<CheckpointSyncSpec> CheckpointSyncSpecFromJson(const Json& j);

using ObjectStoreOpener =
    std::function<StatusOr<std::unique_ptr<store::ObjectStore>>(const StoreAccess& access)>;

// The store, as the task directory's store.json names it (the agent writes it, and rewrites it
// when the master renews short-lived credentials); kUnavailable while it has not come.
StatusOr<std::unique_ptr<store::ObjectStore>> OpenTaskStore(const std::string& task_dir,
                                                            const ObjectStoreOpener& open);

class CheckpointSync {
 public:
  // `log` is told, a line at a time, what the task's own output should say (restored, last push
  // late).
  CheckpointSync(CheckpointSyncSpec spec, std::string task_dir, ObjectStoreOpener open_store,
                 const Clock& clock, std::function<void(const std::string&)> log);
  ~CheckpointSync();

  // Before the task starts. Does nothing unless spec.restore. Between tries, `stopped` says
  // whether the task was stopped meanwhile: then it returns OK without restoring, and the caller,
  // which asks `stopped` too, starts nothing.
  Status Restore(std::optional<Owner> owner, const std::function<bool()>& stopped = {});
  // Starts pushing on a thread of its own (if spec.push).
  void Start();
  // The task has ended: stops the thread, then, if `last` and spec.push, one last push within
  // final_limit. Returns what the task's output should say if it did not complete.
  // Returns false if the last push was left running past final_limit: the object must then
  // never be destroyed (its thread still uses it; the supervisor is about to exit).
  bool Finish(bool last);

 private:
  StatusOr<std::unique_ptr<store::ObjectStore>> OpenStore();
  std::optional<int64_t> ReportedStep() const;
  // One look: pushes if due. Returns the error of a push that failed.
  Status Look(bool last);
  void Loop();

  const CheckpointSyncSpec spec_;
  const std::string task_dir_;
  ObjectStoreOpener open_store_;
  const Clock& clock_;
  std::function<void(const std::string&)> log_;

  // The thread's, and Finish's once the thread has stopped.
  std::optional<store::Snapshot> pushed_;
  std::optional<store::SnapshotPlan> last_plan_;
  std::optional<MonoTime> last_large_push_;
  bool pushed_loaded_ = false;

  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace cohort::agent
