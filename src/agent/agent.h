// The node agent: registers its machine with the master, then keeps what runs here equal to
// what the master wants (docs/architecture.md, "Reconciliation"). It starts each task under its
// own supervisor process (task_supervisor.h), ships task output to the master, and reports exits.
//
// Tasks outlive the agent: stopping or restarting the agent leaves them running, and a new agent
// on the same data directory adopts them.
//
// Task output must not flood the master or the node's disk: each task's output file keeps only
// about its last `log_limit` bytes (agent/output_file.h), the agent ships at most
// `ship_per_round` of it per task and round, and a backlog larger than the master's log limit
// (or its own) is skipped, not shipped, for the master would only drop it again. A task's end
// waits for its output only if little is left (`ship_before_end`); otherwise the end is reported
// at once together with the output's final size, and the rest follows (even once the master
// has forgotten the task).
//
// Every `sample_interval` the agent samples its GPUs and the CPU and memory of its tasks, and
// sends what it sampled with its next sync reports until one reaches the master
// (docs/observability.md, "GPU and host metrics"). On the same tick it looks for new checkpoint
// files in each job's checkpoint directory (agent/checkpoint_watch.h); with the cohort-checkpoint
// lines of a task's output, they move the checkpoint its reports carry, at most once per
// kCheckpointReportInterval a task (agent/checkpoint_throttle.h), and a move is reported at once.
//
// Everything the agent does to the world goes through AgentDeps: the clock, the task launcher
// (processes and signals), the master client (the network) and the samplers. Only the task
// directories are real files. Tests drive an agent by hand on one thread, with Start() and then
// Step() for each round; production calls Run(), which does the same work on two threads until told
// to stop.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "agent/artifact_uploads.h"
#include "agent/checkpoint_throttle.h"
#include "agent/checkpoint_watch.h"
#include "agent/container_runtime.h"
#include "agent/gpu_probe.h"
#include "agent/gpu_sampler.h"
#include "agent/master_client.h"
#include "agent/task_account.h"
#include "agent/task_launcher.h"
#include "agent/task_metrics.h"
#include "agent/task_sampler.h"
#include "agent/task_supervisor.h"
#include "common/time.h"
#include "model/agent_protocol.h"
#include "model/node.h"
#include "os/memory_cgroup.h"

namespace cohort::agent {

class DatasetPrefetcher;  // agent/dataset_prefetcher.h

// Where a job's checkpoints live on this node when they go through the store:
// <data dir>/jobs/<job>/checkpoints.
std::string LocalCheckpointDir(const std::string& data_dir, JobId job);

struct AgentConfig {
  std::string data_dir;  // task directories live in <data_dir>/tasks
  NodeInfo node;         // id, address, CPUs, memory, ports, labels; GPUs come from the probe
  Duration sync_wait = std::chrono::seconds(5);  // long poll; also the heartbeat period
  Duration poll_interval = std::chrono::milliseconds(50);
  // Each task's output kept on this node's disk, and the most of a backlog that is shipped.
  int64_t log_limit = int64_t{256} << 20;
  int64_t ship_per_round = int64_t{2} << 20;   // bytes per task and round (poll_interval)
  int64_t ship_before_end = int64_t{4} << 20;  // what an ended task ships before its end
  // An agent running as root runs a task of root as root only with this (--allow-root-tasks).
  bool allow_root_tasks = false;
  // How often GPUs and tasks are sampled (--sample-interval).
  Duration sample_interval = std::chrono::seconds(5);
  // How a job's checkpoints are pushed to the store (agent/checkpoint_sync.h): at once when at
  // most this much is new (--checkpoint-prompt-bytes), else at most once per interval
  // (--checkpoint-interval); and how long an ended task's last push may hold its GPUs
  // (--checkpoint-final-limit).
  int64_t checkpoint_prompt_bytes = int64_t{64} << 20;
  Duration checkpoint_interval = std::chrono::minutes(5);
  Duration checkpoint_final_limit = std::chrono::minutes(2);
  // The node's dataset cache (agent/dataset_cache.h): <data_dir>/cache, at most this many bytes
  // of versions no task reads (--dataset-cache-size).
  int64_t dataset_cache_bytes = int64_t{100} << 30;
  // Cohort's task tools (`cohort-exec`, exec/), put first on the PATH of the tasks whose launch
  // asks for them: tools/ beside cohortd. Empty: this agent has none, and refuses such tasks.
  std::string tools_dir;
  // (Also the terminal server of shell sessions, kTerminalProgram.)
  // How tasks in images run on this node (--runtime, docs/runtimes.md); none: this node runs
  // none, and its tasks refuse them.
  std::optional<ContainerRuntime> containers = {};
};

// The terminal server of shell sessions' tasks, in tools_dir (terminal/terminal_server.h).
inline constexpr const char* kTerminalProgram = "cohort-terminal";

// What the agent acts through. Each must outlive the agent.
struct AgentDeps {
  const Clock& clock;
  TaskLauncher& launcher;
  MasterClient& master;
  // Null: not sampled (the report carries no samples of that kind).
  GpuSampler* gpu_sampler = nullptr;
  TaskSampler* task_sampler = nullptr;
  // Where tasks' memory requests become their limits (os/memory_cgroup.h); null: this node
  // enforces none, and tasks run without a limit.
  const MemoryCgroups* memory_cgroups = nullptr;
  // How a job's outputs reach the store the master names (agent/artifact_uploads.h); null:
  // store::OpenStore.
  StoreOpener open_store = nullptr;
};

class Agent {
 public:
  Agent(AgentConfig config, GpuInventory gpus, AgentDeps deps);
  ~Agent();

  // Creates the task directories' root and adopts the tasks an earlier agent left in it (their
  // supervisors keep running; ended ones are reported with their exit). kInternal if the data
  // directory is unusable: not this process's, or writable by others. Call once, before the
  // rest.
  Status Start();

  // One round, as a test drives it: notices new pids, ended supervisors and overdue stops;
  // ships new output; then one exchange with the master that does not wait (registering if
  // the agent is not registered), and applies its answer: starts the first tasks it asks for
  // and deletes the first directories of those it forgets (a round's share of each). Returns
  // that exchange's error, if any.
  Status Step();

  // Start(), then registers and reconciles until `stop` becomes true. Returns an error only if
  // the agent cannot work at all (its data directory is unusable); an unreachable master is
  // waited for. The long poll runs on a second thread; once `stop` is seen, Run cancels its call
  // (MasterClient::CancelCalls) and joins it, so Run returns within a few poll intervals.
  Status Run(const std::atomic<bool>& stop);

  // Whether the master has accepted this node and not forgotten it since (kNotFound on a sync).
  bool registered() const { return registered_; }

 private:
  struct LocalTask {
    TaskId id;
    std::string dir;
    pid_t supervisor = 0;
    bool adopted = false;  // started by an earlier agent: not our child
    pid_t pid = 0;         // the command's pid
    Timestamp started_at;
    std::optional<Timestamp> stop_sent_at;
    Duration grace_period{};
    // Fenced (restart.fence): stopped once the agent has gone this long without an answer from
    // the master, the node timeout after which the master replaces it; 0: never.
    Duration fence_after{};
    std::string stop_why;  // why the agent stopped it of its own accord; its report says so
    std::optional<TaskExit> exit;
    int64_t shipped = 0;  // bytes of output.log the master holds
    // The master knows the task ended and how long its output is (it may not have all of it).
    bool end_announced = false;
    bool reported_end = false;
    // The master has recorded the end and forgotten the task; its output is still being shipped.
    bool forgotten = false;
    // Sampled and not yet in a report the master has taken; at most kMaxSamplesPerReport.
    std::deque<TaskSample> samples;
    CheckpointThrottle checkpoints;
    // Where the job's outputs go once the task has ended (TaskLaunch::outputs_key); empty: they
    // are not this task's to upload. Kept in the task's upload.json for a restarted agent.
    std::string outputs_key;
    std::string output_dir;
    bool upload_begun = false;
    // Its job's checkpoints go through the store (TaskLaunch::checkpoints_key): the store's
    // access as last written to its store.json, and the checkpoint it started from, once its
    // supervisor has said (restored.json).
    bool checkpoints_in_store = false;
    std::string store_json;
    std::optional<RestoredCheckpoint> restored_from;
    // It runs in an image; its pull as its supervisor last recorded it (kImagePullFile).
    bool in_image = false;
    std::optional<ImagePull> image_pull;
  };
  // What one round ships of one task's output, worked on without the lock.
  struct Shipment {
    TaskId id;
    std::string path;
    int64_t shipped = 0;
    bool ended = false;
    bool end_announced = false;
  };

  // Makes the data directory and its tasks/ this process's, searchable by tasks (0711: each
  // task's account reaches its own scratch directory) and readable by no one else.
  Status PrepareDataDir();
  // Reads the agent's instance name from its data directory, or makes one up for a new one.
  Status LoadInstance();
  void AdoptExistingTasks();
  // `node_timeout`: the master's, as the desired state that holds `launch` says.
  void Launch(const TaskLaunch& launch, Duration node_timeout);  // requires mu_
  // Whether a task of `job` is here, running, ended or about to start. Requires mu_.
  bool HasTaskOfJob(JobId job) const;
  // Writes the store's access in `launch` for its running task's supervisor, if it changed.
  // Requires mu_.
  void RenewStoreAccess(const TaskLaunch& launch);
  // Stops the fenced tasks once the master has not answered for longer than they may outlive
  // it; requires mu_.
  void Fence(Timestamp now);
  // Makes at most `most` of the launches Apply queued, each under the lock, which the sync
  // thread takes between them; returns true if some are left for the next round. `launched`:
  // whether there were any.
  bool LaunchPending(size_t most, bool* launched = nullptr);
  // The version a report carries: the last one applied, or while launches are pending, the
  // one before them, so that the master does not judge their tasks lost (requires mu_).
  uint64_t ReportedVersion() const;
  // Deletes at most `most` directories of forgotten tasks, without the lock; returns true if
  // some are left.
  bool DiscardForgotten(size_t most);
  // A task's container, where its supervisor died (killed, or the machine rebooted) before it
  // could remove it: it may still run under conmon.
  void RemoveLeftContainer(const LocalTask& t);
  // The image cache's images, when they changed or a minute after they were last sent.
  void FillCachedImages(AgentReport& report);
  // Records a task that the agent `what` ("refused to start"): `why` goes to its output and
  // its report.
  void NotStarted(LocalTask& t, const char* what, const std::string& why,
                  std::optional<StartFailure> kind = std::nullopt);
  void Apply(const DesiredState& desired);
  AgentReport BuildReport();
  // Notices new pids, ended supervisors and overdue stops, taking at most kExitsPerRound ended
  // tasks' exits (`more`, if given, says whether others are waiting); returns true if the
  // master should hear about it now.
  bool CheckTasks(bool* more = nullptr);
  // Samples the GPUs and the running tasks if `sample_interval` has passed since the last time.
  void SampleResources();
  // Drops the samples that a report the master has taken carried.
  void Acknowledge(const AgentReport& report);
  // Ships new output of every task; returns true if an ended task may now be reported.
  bool ShipLogs();
  // Reads every task's new metric points and ships what the master takes (agent/task_metrics.h).
  void ShipMetrics();
  // Takes the checkpoints of the lines read and, every `sample_interval`, of the files in the
  // checkpoint directories; returns true if a task's reported checkpoint moved, which the master
  // should hear about now.
  bool WatchCheckpoints();
  // The watch of a task's job's checkpoint directory, as its spec.json says: rank 0 watches it
  // for the job; null for the other tasks.
  std::unique_ptr<CheckpointWatch> CheckpointWatchFor(const std::string& dir, Timestamp since);
  // The collector of a task's metrics, as its spec.json says (its rank, the job's log dir).
  std::unique_ptr<TaskMetrics> MetricsFor(const TaskId& id, const std::string& dir);
  // Ships what this round allows of one task's output.
  void Ship(Shipment& s);
  // The most of a task's backlog worth shipping: the smaller of the master's limit and ours.
  int64_t BacklogLimit() const;
  // Whether the task's end may be reported: its output is with the master, or announced.
  bool EndReportable(const LocalTask& t) const;
  // One exchange with the master: Register if the agent is not registered, else Sync waiting up
  // to `wait`; applies the answer. kNotFound from Sync leaves the agent unregistered.
  Status SyncOnce(Duration wait);
  // The long-poll loop of Run's second thread.
  void SyncLoop(const std::atomic<bool>& stop);
  // Begins the uploads of the outputs of tasks that have ended (listing their directories
  // without the lock); returns true if it began any, which the master should hear of now.
  bool BeginUploads();
  // Run's third thread: sends the uploads' files one at a time.
  void UploadLoop(const std::atomic<bool>& stop);

  AgentConfig config_;
  const Clock& clock_;
  TaskLauncher& launcher_;
  MasterClient& master_;
  GpuSampler* gpu_sampler_;
  TaskSampler* task_sampler_;
  const MemoryCgroups* memory_cgroups_;
  std::optional<TaskAccounts> accounts_;  // from Start()
  std::mutex mu_;  // guards tasks_, gpu_samples_, applied_version_ and every call of launcher_
  std::map<TaskId, LocalTask> tasks_;
  // By GPU index: sampled and not yet in a report the master has taken.
  std::map<int, std::deque<GpuSample>> gpu_samples_;
  std::optional<Timestamp> next_sample_at_;  // only the main loop's thread touches it
  // Only the thread of ShipMetrics (the main loop) touches these.
  std::map<TaskId, std::unique_ptr<TaskMetrics>> metrics_;
  bool metric_drop_told_ = false;
  // Only the main loop touches these: checkpoint lines read and not yet noted, and the watches
  // of running tasks (null for a task that watches nothing).
  std::map<TaskId, Timestamp> line_checkpoints_;
  std::map<TaskId, std::unique_ptr<CheckpointWatch>> checkpoint_watches_;
  std::optional<Timestamp> next_checkpoint_look_at_;
  bool checkpoint_truncation_told_ = false;
  uint64_t applied_version_ = 0;
  // The last answer from the master (or the agent's start): what fencing counts from.
  Timestamp last_answer_{};
  // Launches that Apply took and the main loop has yet to make, oldest first (guarded by mu_):
  // a sync never waits behind a thousand of them (docs/reliability.md, "The agent outlives its
  // own tasks").
  std::deque<TaskLaunch> pending_launches_;
  // The master's node timeout, as the desired state that queued them said (fencing).
  Duration pending_node_timeout_{};
  uint64_t version_before_launches_ = 0;  // the applied version when the first was queued
  // Directories of tasks the master has forgotten, deleted a few at a time (guarded by mu_).
  std::deque<std::string> discarded_dirs_;
  // Jobs whose last task here was forgotten: their directory on this node goes, unless a task of
  // theirs has come back by then (DiscardForgotten).
  std::deque<JobId> discarded_job_dirs_;
  // Jobs' outputs on their way to the store; thread-safe itself.
  std::unique_ptr<ArtifactUploads> uploads_;
  // Fetches datasets into the node's cache ahead of the jobs that read them.
  std::unique_ptr<DatasetPrefetcher> prefetcher_;
  // The images of the node's image cache last reported, and when (AgentReport::cached_images).
  std::optional<std::vector<std::string>> images_sent_;
  Timestamp images_sent_at_{};
  Timestamp images_listed_at_{};
  bool images_changed_ = false;  // a task's pull finished since the last listing
  static constexpr Duration kImageListingEvery = std::chrono::seconds(5);
  std::atomic<bool> registered_{false};
  std::atomic<int64_t> master_log_limit_{0};  // from the master's answers; 0 until one says
};

}  // namespace cohort::agent
