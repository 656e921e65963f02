// The agent-master protocol is a reconciliation (docs/architecture.md): the agent reports what
// it runs, the master answers with what should run. Either side may restart; the next exchange
// puts them back in agreement.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/time.h"
#include "model/dataset.h"
#include "model/image_pull.h"
#include "model/job.h"
#include "model/resource_samples.h"
#include "model/restored_checkpoint.h"
#include "model/run_as.h"
#include "model/start_failure.h"
#include "model/store_access.h"
#include "model/upload_progress.h"

namespace cohort {

// A file the agent writes into a task's directory before it starts, readable by the task's
// account, and names in each of `env` (an MPI or DeepSpeed hostfile: framework/).
struct TaskFile {
  std::string name;  // a file name: letters, digits, '.', '_', '-'
  std::string content;
  std::vector<std::string> env;
  bool operator==(const TaskFile&) const = default;
};

// One task the master wants running on an agent. Everything the agent needs to start it.
struct TaskLaunch {
  TaskId id;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;  // the whole injected environment
  std::string workdir;                     // empty: the task's scratch directory
  std::vector<int> gpus;
  Duration grace_period = std::chrono::seconds(30);
  // Who the task runs as (docs/security.md). An empty user (a master older than the agent) is
  // refused by an agent running as root.
  RunAs run_as;
  // The job's directories that outlive the task (framework::JobDirectories), which the agent
  // gives to the task's account before it starts; empty: none.
  std::string checkpoint_dir;
  std::string output_dir;
  std::string log_dir;
  // The task's memory request, which the agent makes its limit where the node's cgroups allow
  // (agent/memory_cgroup.h); 0: none.
  int64_t memory_limit_bytes = 0;
  // The job is fenced (restart.fence): an agent cut off from the master for longer than
  // DesiredState::node_timeout stops the task itself.
  bool fence = false;
  // A sweep trial's hyperparameter values as JSON text (model/trial.h), which the agent writes to
  // hparams.json in the task's directory and names in COHORT_HPARAMS; empty: not a trial.
  std::string hparams = {};
  // Where the job's outputs go once this task has ended (docs/data.md, "Outputs"): their key
  // prefix ("jobs/7/outputs"). Empty for every task but the one that uploads the job's output
  // directory. How to reach the store comes when the master allows the upload.
  std::string outputs_key = {};
  // Where the job's checkpoints go between attempts (docs/data.md, "Checkpoints"): their key
  // prefix ("jobs/7/checkpoints"), and how to reach the store (credentials for the job's keys
  // only, where the store allows; renewed in later answers). Empty: the master keeps no
  // checkpoints for the job, and its checkpoint directory is the shared one above.
  std::string checkpoints_key = {};
  StoreAccess store = {};
  // The datasets the task sees read-only at $COHORT_DATA_DIR/NAME, fetched with `store` into
  // the node's cache before it starts (docs/data.md, "Datasets").
  std::vector<TaskDataset> datasets = {};
  // The key of the job's code, a context manifest that the task starts in an unpacked copy of
  // when `workdir` is empty (docs/data.md, "Code"); empty: none.
  std::string context_key = {};
  // Written before it starts (TaskFile); at most kMaxTaskFiles.
  std::vector<TaskFile> files = {};
  // Cohort's task tools (`cohort-exec`) first on the task's PATH: what mpirun's remote launch
  // calls (docs/job-spec.md, "MPI").
  bool tools = false;
  // srun and scontrol too (tools/slurm/, before them): what a Slurm job's batch script calls
  // (docs/slurm.md).
  bool slurm_tools = false;
  // The command runs under `cohort-exec serve`, which starts commands inside this task for the
  // holders of its job's credential on the task's port; with no command, the task only serves,
  // until it is stopped.
  bool exec_service = false;
  // The task is an interactive shell (a session, model/session_spec.h): its command is the
  // agent's `cohort-terminal serve` (terminal/terminal_server.h), inside the task's image too,
  // which serves the job's terminal to the master on the task's port.
  bool terminal = false;
  // The container image the task runs in (docs/runtimes.md), fully qualified; empty: a bare
  // process. `image_insecure`: its registry is reached over plain HTTP or without checking its
  // certificate (`cohortd master --insecure-image-registry`).
  std::string image = {};
  bool image_insecure = false;
};
inline constexpr size_t kMaxTaskFiles = 8;

// What an agent knows of one task it started.
struct TaskReport {
  TaskId id;
  TaskState state = TaskState::kRunning;  // running, succeeded, failed or killed
  std::optional<int> exit_code;
  std::optional<int> signal;
  int64_t pid = 0;
  std::optional<Timestamp> started_at;
  std::optional<Timestamp> finished_at;
  // Why the agent could not start the task ("no Unix account ...", with exit code 126 and no
  // signal), or why a task that ran was ended ("exceeded its memory limit ...", "fenced: ...");
  // empty otherwise. (An initializer, so that aggregates that leave it out still mean "empty"
  // without a warning.)
  std::string message = {};
  // Set when the task could not start for a cause no retry on this node fixes (its program,
  // workdir or account; model/start_failure.h): the master does not spend the restart budget on
  // it. `message` says why.
  std::optional<StartFailure> start_failure = {};
  // Its CPU and memory measured since the master last took a report, oldest first; at most
  // kMaxSamplesPerReport (empty from an agent that does not sample).
  std::vector<TaskSample> samples = {};
  // The newest checkpoint the task reported (a cohort-checkpoint line, a file in its job's
  // checkpoint directory), by the agent's clock; none before its first. Every report carries it,
  // so a master that missed one learns it from the next.
  std::optional<Timestamp> checkpoint_at = {};
  // The checkpoint the task started from, once its supervisor has restored one.
  std::optional<RestoredCheckpoint> restored_from = {};
  // Its image's pull onto the node, while it runs and once it is done; none where the node had
  // the image, or the task runs none.
  std::optional<ImagePull> image_pull = {};
};

struct AgentReport {
  // The DesiredState::version this agent has applied; 0 before its first.
  uint64_t applied_version = 0;
  std::vector<TaskReport> tasks;
  // The node's GPUs measured since the master last took a report, one entry per GPU with any
  // known figure, each with at most kMaxSamplesPerReport samples.
  std::vector<GpuSamples> gpu_samples = {};
  // Its uploads of jobs' outputs (agent/artifact_uploads.h) that the master has not told it to
  // forget, at most kMaxUploadsPerReport of them.
  std::vector<UploadProgress> uploads = {};
  // The dataset versions its cache holds whole (their ids, DatasetCacheId), at most
  // kMaxCachedDatasetsPerReport, most recently used first; sent when they change and every
  // minute, unset otherwise (the master keeps what it was last told).
  std::optional<std::vector<std::string>> cached_datasets = {};
  // The images its image cache holds (agent/image_cache.h), qualified references, at most
  // kMaxCachedImagesPerReport, most recently used first; sent when they change and every minute,
  // unset otherwise (the master keeps what it was last told).
  std::optional<std::vector<std::string>> cached_images = {};
  // Fetches ahead of placement (DesiredState::prefetch) that failed since the last report, by
  // version id: why.
  std::map<std::string, std::string> prefetch_failures = {};
};

// The most cached versions one report names, and the most prefetches one desired state asks.
inline constexpr size_t kMaxCachedDatasetsPerReport = 512;
inline constexpr size_t kMaxCachedImagesPerReport = 256;
inline constexpr size_t kMaxPrefetchesPerNode = 64;
// The longest reason a report gives for a failed fetch ahead (longer ones are cut).
inline constexpr size_t kMaxPrefetchFailureBytes = 1024;

// A dataset version to fetch into a node's cache before the job that reads it is placed there
// (docs/data.md, "Placement and the pull").
struct DatasetPrefetch {
  std::string ref;           // "team/name:3", for the agent's log
  std::string manifest_key;  // where its manifest lies in the store
  StoreAccess store;         // reaches the manifest and its chunks (read only where it can)
};

// The most uploads one report carries; an agent with more reports the rest later.
inline constexpr size_t kMaxUploadsPerReport = 64;

struct DesiredState {
  uint64_t version = 0;
  std::vector<TaskLaunch> tasks;  // should be running; anything else running must be stopped
  std::vector<TaskId> forget;     // ended tasks the master has recorded: stop reporting them
  // How long the master waits for this agent before it declares the node LOST and replaces its
  // tasks: a fenced task outlives a cut-off agent's last sync by no more. 0: not said (a master
  // older than the agent), and nothing is fenced.
  Duration node_timeout{};
  // The master's word on uploads the agent reported (by UploadProgress::id): those that may
  // begin, with how to reach the store (credentials for the job's keys only, where the store
  // allows), those refused with the reason (a team's store quota), and those whose end the
  // master has recorded, which the agent then forgets.
  std::map<std::string, StoreAccess> allow_uploads = {};
  std::map<std::string, std::string> refuse_uploads = {};
  std::vector<std::string> forget_uploads = {};
  // Dataset versions to fetch into the node's cache now, ahead of a job's placement: at most
  // kMaxPrefetchesPerNode. The agent fetches each once, on a thread of its own, and says in its
  // reports when it holds it (cached_datasets) or why it could not (prefetch_failures).
  std::vector<DatasetPrefetch> prefetch = {};
};

// One upload of a task's output: POST /api/v1/agents/{node}/logs/{task}.
struct LogUpload {
  int64_t offset = 0;  // where `data` starts in the task's output
  std::string_view data;
  // The agent no longer has the bytes between what the master holds and `offset` (it fell
  // behind by more than the log limit and skipped ahead): the master records them as dropped.
  bool skip = false;
  std::optional<int64_t> end;  // the task has ended and its whole output is this long
};

// The master's answer to an upload.
// What the master did with a batch of a task's metric points (POST /agents/{node}/metrics/...).
struct MetricUploadResult {
  int64_t stored = 0;
  int64_t dropped = 0;      // over a limit of the master's
  std::string why_dropped;  // the first limit hit
};

struct LogUploadResult {
  int64_t size = 0;   // the size of the master's copy now
  int64_t limit = 0;  // what the master keeps of each task's log; 0 if it did not say
};

}  // namespace cohort
