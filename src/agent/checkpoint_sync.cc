#include "agent/checkpoint_sync.h"

#include <fmt/format.h>

#include <filesystem>

#include "agent/store_retry.h"
#include "common/strings.h"
#include "common/units.h"
#include "os/directory.h"
#include "os/durable_file.h"
#include "os/process.h"

namespace cohort::agent {
namespace {

bool SamePlan(const store::SnapshotPlan& a, const store::SnapshotPlan& b) {
  if (a.files.size() != b.files.size()) return false;
  for (size_t i = 0; i < a.files.size(); ++i) {
    const auto &x = a.files[i], &y = b.files[i];
    if (x.path != y.path || x.size != y.size || x.mtime_ns != y.mtime_ns) return false;
  }
  return true;
}

}  // namespace

Json ToJson(const CheckpointSyncSpec& s) {
  return Json{{"dir", s.dir},
              {"key", s.key},
              {"attempt", s.attempt},
              {"restore", s.restore},
              {"push", s.push},
              {"prompt_bytes", s.prompt_bytes},
              {"large_every_ms", ToMillis(s.large_every)},
              {"final_limit_ms", ToMillis(s.final_limit)},
              {"look_ms", ToMillis(s.look)},
              {"restore_limit_ms", ToMillis(s.restore_limit)}};
}

StatusOr<CheckpointSyncSpec> CheckpointSyncSpecFromJson(const Json& j) {
  try {
    CheckpointSyncSpec s;
    s.dir = j.at("dir").get<std::string>();
    s.key = j.at("key").get<std::string>();
    s.attempt = j.at("attempt").get<int>();
    s.restore = j.at("restore").get<bool>();
    s.push = j.at("push").get<bool>();
    s.prompt_bytes = j.at("prompt_bytes").get<int64_t>();
    s.large_every = std::chrono::milliseconds(j.at("large_every_ms").get<int64_t>());
    s.final_limit = std::chrono::milliseconds(j.at("final_limit_ms").get<int64_t>());
    s.look = std::chrono::milliseconds(std::max<int64_t>(j.at("look_ms").get<int64_t>(), 10));
    s.restore_limit = std::chrono::milliseconds(j.at("restore_limit_ms").get<int64_t>());
    if (s.dir.empty() || s.key.empty()) {
      return Status::InvalidArgument("checkpoints: dir and key must not be empty");
    }
    return s;
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("checkpoints: {}", e.what()));
  }
}

CheckpointSync::CheckpointSync(CheckpointSyncSpec spec, std::string task_dir,
                               ObjectStoreOpener open_store, const Clock& clock,
                               std::function<void(const std::string&)> log)
    : spec_(std::move(spec)),
      task_dir_(std::move(task_dir)),
      open_store_(std::move(open_store)),
      clock_(clock),
      log_(std::move(log)) {}

CheckpointSync::~CheckpointSync() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

StatusOr<std::unique_ptr<store::ObjectStore>> OpenTaskStore(const std::string& task_dir,
                                                            const ObjectStoreOpener& open) {
  std::string text = ReadFileOrEmpty(task_dir + "/" + kStoreAccessFile);
  if (text.empty()) {
    return Status::Unavailable("the store's access has not come from the master yet");
  }
  COHORT_ASSIGN_OR_RETURN(Json j, ParseJson(text));
  COHORT_ASSIGN_OR_RETURN(StoreAccess access, StoreAccessFromJson(j));
  return open(access);
}

StatusOr<std::unique_ptr<store::ObjectStore>> CheckpointSync::OpenStore() {
  return OpenTaskStore(task_dir_, open_store_);
}

std::optional<int64_t> CheckpointSync::ReportedStep() const {
  std::string text(Trim(ReadFileOrEmpty(task_dir_ + "/" + kCheckpointStepFile)));
  if (text.empty()) return std::nullopt;
  try {
    size_t used = 0;
    int64_t step = std::stoll(text, &used);
    if (used == text.size()) return step;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

Status CheckpointSync::Restore(std::optional<Owner> owner, const std::function<bool()>& stopped) {
  if (!spec_.restore) return Status::Ok();
  auto restore = [&]() -> Status {
    COHORT_ASSIGN_OR_RETURN(auto store, OpenStore());
    COHORT_ASSIGN_OR_RETURN(auto snapshot, store::ReadSnapshot(*store, spec_.key));
    pushed_loaded_ = true;
    // None stored: the task starts afresh, and its output says nothing of it (an attempt of a
    // job that keeps no checkpoints is no different from the first).
    if (!snapshot) return Status::Ok();
    const std::string staging = task_dir_ + "/restore";
    COHORT_RETURN_IF_ERROR(EnsureDirectory(staging, 0700, std::nullopt));
    auto pulled = store::PullSnapshot(*store, spec_.key, *snapshot, spec_.dir, staging, owner);
    std::error_code ignored;
    std::filesystem::remove_all(staging, ignored);
    if (!pulled.ok()) return pulled.status();
    RestoredCheckpoint restored{snapshot->attempt, snapshot->step, snapshot->taken_at,
                                static_cast<int64_t>(snapshot->files.size()), snapshot->bytes};
    COHORT_RETURN_IF_ERROR(WriteFileAtomically(
        task_dir_ + "/" + kRestoredFile, ToJson(restored).dump(), 0600, Durability::kProcessCrash));
    log_(fmt::format("cohort: restored {} into {} ({} fetched, {} files already here)",
                     DescribeRestored(restored), spec_.dir,
                     FormatByteSizeApprox(pulled->bytes_fetched), pulled->files_kept));
    pushed_ = std::move(*snapshot);
    return Status::Ok();
  };
  Status restored = RetryWhileStoreDown(
      clock_, spec_.restore_limit, stopped,
      [&](const Status& why) {
        log_(fmt::format("cohort: waiting for the store to restore the job's checkpoint: {}",
                         why.message()));
      },
      restore);
  if (restored.ok()) return restored;
  return Status::Unavailable(
      fmt::format("could not restore the job's checkpoint from the store: {}", restored.message()));
}

Status CheckpointSync::Look(bool last) {
  // Looked at locally first: a task that writes no checkpoints never reaches the store.
  const store::Snapshot* previous = pushed_ ? &*pushed_ : nullptr;
  auto planned = store::PlanSnapshot(spec_.dir, previous);
  // No directory (the task never started, or the node's copy was removed): nothing to send.
  if (planned.status().code() == StatusCode::kNotFound) return Status::Ok();
  COHORT_ASSIGN_OR_RETURN(store::SnapshotPlan plan, std::move(planned));
  std::optional<int64_t> step = ReportedStep();
  bool new_step = step && (!pushed_ || pushed_->step != step);
  if (!plan.changed && !new_step) return Status::Ok();
  if (!plan.changed && previous == nullptr) return Status::Ok();
  if (!last) {
    // A file still being written changes between looks: wait until a look finds it as it was.
    bool stable = last_plan_ && SamePlan(*last_plan_, plan);
    last_plan_ = plan;
    if (!stable) return Status::Ok();
    bool large = plan.bytes_to_send > spec_.prompt_bytes;
    if (large && last_large_push_ && clock_.Monotonic() < *last_large_push_ + spec_.large_every) {
      return Status::Ok();
    }
  }
  COHORT_ASSIGN_OR_RETURN(auto store, OpenStore());
  if (!pushed_loaded_) {
    // The snapshot this one replaces, so that its blobs that nothing names any more go.
    COHORT_ASSIGN_OR_RETURN(pushed_, store::ReadSnapshot(*store, spec_.key));
    pushed_loaded_ = true;
    if (pushed_) {
      previous = &*pushed_;
      COHORT_ASSIGN_OR_RETURN(plan, store::PlanSnapshot(spec_.dir, previous));
    }
  }
  const bool large = plan.bytes_to_send > spec_.prompt_bytes;
  COHORT_ASSIGN_OR_RETURN(store::Snapshot pushed,
                          store::PushSnapshot(*store, spec_.key, spec_.dir, plan, previous,
                                              spec_.attempt, step, clock_.Now()));
  if (large) last_large_push_ = clock_.Monotonic();
  pushed_ = std::move(pushed);
  last_plan_.reset();
  return Status::Ok();
}

void CheckpointSync::Start() {
  if (!spec_.push) return;
  thread_ = std::thread([this] { Loop(); });
}

void CheckpointSync::Loop() {
  Duration wait = spec_.look;
  std::string last_error;
  while (true) {
    {
      std::unique_lock lock(mu_);
      if (wake_.wait_for(lock, wait, [&] { return stop_; })) return;
    }
    Status s = Look(false);
    if (s.ok()) {
      wait = spec_.look;
      last_error.clear();
      continue;
    }
    // Said once per kind of trouble: the task's output is the user's.
    if (s.message() != last_error) {
      log_(fmt::format("cohort: the job's checkpoint is not stored yet: {}", s.message()));
      last_error = s.message();
    }
    wait = std::min<Duration>(std::max(wait * 2, spec_.look), std::chrono::minutes(1));
  }
}

bool CheckpointSync::Finish(bool last) {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (!last || !spec_.push) return true;
  // The last push runs where it can be left behind: a store that hangs must not hold the
  // task's GPUs for longer than final_limit.
  struct Outcome {
    std::mutex mu;
    std::condition_variable done;
    std::optional<Status> status;
  };
  auto outcome = std::make_shared<Outcome>();
  thread_ = std::thread([this, outcome] {
    Status s = Look(true);
    std::lock_guard lock(outcome->mu);
    outcome->status = s;
    outcome->done.notify_all();
  });
  std::unique_lock lock(outcome->mu);
  if (!outcome->done.wait_for(lock, spec_.final_limit,
                              [&] { return outcome->status.has_value(); })) {
    log_(fmt::format(
        "cohort: the last checkpoint was not stored within {}s: the next attempt starts from the "
        "one stored before",
        ToMillis(spec_.final_limit) / 1000));
    thread_.detach();
    return false;
  }
  lock.unlock();
  thread_.join();
  if (!outcome->status->ok()) {
    log_(fmt::format("cohort: the last checkpoint was not stored: {}", outcome->status->message()));
  }
  return true;
}

}  // namespace cohort::agent
