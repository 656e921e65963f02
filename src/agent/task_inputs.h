// What a task reads that comes from the store (docs/data.md, "Datasets" and "Code"), made ready
// by its supervisor before the command starts:
//
//   - each dataset the job names, from the node's cache (agent/dataset_cache.h), fetched into it
//     first if it is not there, and held there while the task runs; the task sees it read-only
//     at <task dir>/data/NAME ($COHORT_DATA_DIR/NAME), a link into the cache. data/ is the
//     task's account's, 0500: other accounts on the node do not learn where the cache keeps it;
//   - the job's code, unpacked into the task's scratch directory (where it starts unless its
//     group names a workdir), as the task's account: its own copy, to change as it likes.
//
// A store out of reach is tried again until `fetch_limit`; then the task fails with the reason.
// Pulling is not GPU time the scheduler can give back: the GPUs are held from the moment the
// task is placed (docs/data.md says how placement and the pull interact).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/checkpoint_sync.h"
#include "common/status.h"
#include "common/time.h"
#include "model/dataset.h"
#include "model/json.h"
#include "os/credentials.h"

namespace cohort::agent {

// spec.json's "inputs".
struct TaskInputsSpec {
  std::string cache_dir;  // the node's dataset cache
  int64_t cache_bytes = 0;
  std::vector<TaskDataset> datasets;
  std::string context_key;  // empty: no code to unpack
  Duration fetch_limit = std::chrono::minutes(10);
};
Json ToJson(const TaskInputsSpec& spec);
StatusOr<TaskInputsSpec> TaskInputsSpecFromJson(const Json& j);

// <task dir>/data: the task's $COHORT_DATA_DIR.
std::string TaskDataDir(const std::string& task_dir);

// What FetchTaskInputs holds for the task: the cache's locks on its datasets, kept for its life.
struct HeldInputs {
  std::vector<int> lock_fds;
  void Release();
};

// Fetches the task's datasets and code as above. `owner`: the task's account (none when the
// supervisor is not root: the files stay its own). `stopped` as in RetryWhileStoreDown; `log`
// gets lines for the task's output (what was fetched, how much, how long).
StatusOr<HeldInputs> FetchTaskInputs(const TaskInputsSpec& spec, const std::string& task_dir,
                                     const ObjectStoreOpener& open_store, const Clock& clock,
                                     std::optional<Owner> owner,
                                     const std::function<bool()>& stopped,
                                     const std::function<void(const std::string&)>& log);

}  // namespace cohort::agent
