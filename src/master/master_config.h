// How the master is run: what cohortd's flags (and tests) set.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"
#include "common/time.h"
#include "master/advisor.h"
#include "master/image_registries.h"
#include "master/log_store.h"
#include "master/session_policy.h"
#include "model/store_access.h"
#include "scheduler/runtime_history.h"

namespace cohort::master {

// The PENDING jobs one user, and one team, may have: a submission beyond either is refused (429),
// so that nobody's queue grows the master's memory and database without end (a job in memory is
// its spec, up to 256 KiB; docs/reliability.md, "Floods and hostile input"). Far above a real
// queue; an admin changes them with cohortd master's --max-queued-per-user and
// --max-queued-per-team.
inline constexpr int kDefaultMaxQueuedPerUser = 1000;
inline constexpr int kDefaultMaxQueuedPerTeam = 5000;
inline constexpr int64_t kDefaultStoreQuotaPerTeam = int64_t{1} << 40;  // 1 TiB

struct MasterConfig {
  std::string data_dir;      // the state database and the task logs live here
  std::string storage_root;  // job checkpoints and outputs; empty: <data_dir>/storage
  // No sync for this long: the node is LOST, its tasks too, and their gangs are requeued
  // (docs/reliability.md). Agents sync at least every 5 s.
  Duration node_timeout = std::chrono::seconds(10);
  // Jobs of a team nobody created go to this team; empty: they are refused.
  std::string unknown_team_fallback;
  // With at least this many jobs waiting, an arrival or a completion is decided at once against
  // what the last full pass left (scheduler/incremental.h), and the next full pass runs on the
  // next tick; with fewer, every change runs a full pass at once.
  size_t incremental_above = 1000;
  // 0: no cap.
  int max_queued_per_user = kDefaultMaxQueuedPerUser;
  int max_queued_per_team = kDefaultMaxQueuedPerTeam;
  // Called when a write fails after memory has changed; it must not return into the master's
  // work (a test's handler may, and then checks what the store holds). Unset: log and exit 70.
  std::function<void(const Status&)> fail_stop;
  Duration tick_interval = std::chrono::milliseconds(500);
  int64_t log_limit = kDefaultLogLimit;  // stored bytes of each task's log (master/log_store.h)
  // Audit entries older than this are pruned, from the tick, at most once an hour.
  Duration audit_retention = std::chrono::hours(24 * 90);
  // What the advisor calls a starved input pipeline and idle GPUs (master/advisor.h); with
  // `reclaim_idle_gpus`, a job whose GPUs have been idle that long has them taken back so that
  // others may have them (JobLifecycle::ReclaimIdle).
  AdvisorConfig advisor;
  bool reclaim_idle_gpus = false;
  // Interactive sessions' idle timeout, warning and priority (master/session_policy.h).
  SessionPolicy sessions;
  // A job placed on nodes whose caches lack its datasets is held back, its GPUs free, while
  // they fetch them, and a waiting job's are fetched ahead to the nodes of its reservation
  // (master/dataset_staging.h); false: tasks pull them with their GPUs held
  // (--no-dataset-staging).
  bool stage_datasets = true;
  // Free space the state disk keeps: under it the master is read-only (master/state_disk.h).
  uint64_t state_disk_reserve = 64ULL << 20;
  // The most keys the runtime history keeps (scheduler/runtime_history.h), rows in the store
  // included; tests make it small.
  size_t history_max_keys = scheduler::RuntimeHistory::kMaxKeys;
  // The object store (docs/data.md) as agents reach it for jobs' outputs; empty: the directory
  // <data_dir>/store. The master's own handle on it is MasterDeps::objects.
  StoreAccess store;
  // The bytes of jobs' outputs that each team may keep in the store (--store-quota-per-team);
  // 0: no limit.
  int64_t store_quota_per_team = kDefaultStoreQuotaPerTeam;
  // The key of jobs' credentials (auth/job_credential.h): kJobCredentialKeyBytes that `cohortd
  // master` keeps in <data_dir>/job-credential.key; empty: the master makes one for its own life
  // (tests), and a restart changes the credentials of running jobs.
  std::string job_credential_key;
  // Where task images come from (docs/runtimes.md): the first is the default for references that
  // name no registry; none: jobs that name an image are refused.
  std::vector<ImageRegistry> image_registries;
};

// The object store's directory when none is given (--store): <data_dir>/store.
inline std::string StoreDirOf(const MasterConfig& config) { return config.data_dir + "/store"; }

// Where jobs' checkpoints and outputs go: --storage-root, else <data_dir>/storage.
inline std::string StorageRootOf(const MasterConfig& config) {
  return config.storage_root.empty() ? config.data_dir + "/storage" : config.storage_root;
}

// The team a spec gets when it names none; it exists without being created (no guarantee, no
// limit) unless an admin gives it a quota.
inline constexpr const char* kDefaultTeam = "default";

}  // namespace cohort::master
