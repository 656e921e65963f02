#include "agent/agent.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "agent/checkpoint_sync.h"
#include "agent/dataset_prefetcher.h"
#include "agent/image_cache.h"
#include "agent/job_directories.h"
#include "agent/output_file.h"
#include "agent/task_inputs.h"
#include "agent/task_memory.h"
#include "common/strings.h"
#include "common/units.h"
#include "model/json.h"
#include "model/limits.h"
#include "model/metric.h"
#include "model/workdir.h"
#include "os/directory.h"
#include "os/durable_file.h"
#include "os/process.h"
#include "store/open_store.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;

// One upload: bounds what the master takes in one request, and so how long it is busy with it.
constexpr int64_t kShipChunk = kMaxLogUploadBytes;
// Marks a task directory whose task the master has forgotten while its output is still being
// shipped, so that an agent that restarts goes on shipping without reporting the task.
constexpr const char* kForgottenFile = "forgotten";
// Where the job's outputs go once the task has ended, for a restarted agent (0600).
constexpr const char* kUploadFile = "upload.json";
// Task samples in one sync report, all tasks together: about 160 KiB.
constexpr size_t kMaxReportTaskSamples = 2048;

// The write end of the pipe that wakes the agent's main loop; -1 until it exists.
std::atomic<int> g_wake_fd{-1};

// Wakes the main loop now: a supervisor exited, or the sync thread queued launches for it.
void WakeMainLoop() {
  int fd = g_wake_fd.load();
  if (fd >= 0) {
    char c = 1;
    (void)!::write(fd, &c, 1);  // async-signal-safe; a full pipe already means "wake up"
  }
}

void OnChildExited(int) { WakeMainLoop(); }
// What one round of the main loop does at most, so that however many tasks start or end at
// once, a round stays short and the sync thread gets the lock between rounds. A round that
// leaves work over starts the next one at once.
constexpr size_t kLaunchesPerRound = 32;
constexpr size_t kExitsPerRound = 64;
constexpr size_t kDiscardsPerRound = 64;

// After the grace period, the supervisor kills the task itself; this much longer, and the agent
// kills the supervisor too.
constexpr Duration kSupervisorSlack = std::chrono::seconds(10);

int64_t FileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

TaskState EndState(const TaskExit& exit) {
  if (exit.stopped) return TaskState::kKilled;
  if (exit.exit_code && *exit.exit_code == 0) return TaskState::kSucceeded;
  return TaskState::kFailed;
}

// The exit of a task that never ran, and why; `kind` where no retry on this node fixes it.
TaskExit NeverRan(Timestamp at, std::string why, std::optional<StartFailure> kind = std::nullopt) {
  TaskExit exit;
  exit.exit_code = 126;
  exit.started_at = at;
  exit.finished_at = at;
  exit.message = std::move(why);
  exit.start_failure = kind;
  return exit;
}

// Deletes a task's directory, or a job's on this node. A directory an account holds (a scratch
// directory its supervisor did not take back because it was killed first; a job's checkpoints)
// is emptied as that account: walked by root, a link swapped in at the right moment could make
// root delete a file anywhere.
Status RemoveTaskDir(const std::string& dir) {
  // The account's directories are emptied as the account. $COHORT_DATA_DIR (data/) is 0500,
  // read-only to it: given back its write right first (a chmod follows no link to reach it).
  for (const char* held : {"/work", "/checkpoints", "/data"}) {
    std::string path = dir + held;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid != ::geteuid()) {
      int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd >= 0) {
        (void)::fchmod(fd, (st.st_mode & 07777) | S_IRWXU);
        ::close(fd);
      }
      COHORT_RETURN_IF_ERROR(EmptyDirectoryAs(path, Owner{st.st_uid, st.st_gid}));
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) return Status::Internal(fmt::format("cannot delete {}: {}", dir, ec.message()));
  return Status::Ok();
}

// The same, for a task the agent is done with: what is left is only logged.
void DiscardTaskDir(const std::string& dir) {
  Status removed = RemoveTaskDir(dir);
  if (!removed.ok()) spdlog::error("{} is left on disk: {}", dir, removed.message());
}

// Sleeps for `d`, or less once `stop` is set, so that stopping never waits out a back-off.
void SleepUnlessStopped(Duration d, const std::atomic<bool>& stop) {
  constexpr Duration kSlice = std::chrono::milliseconds(50);
  for (Duration left = d; left > Duration(0) && !stop; left -= kSlice) {
    std::this_thread::sleep_for(std::min(left, kSlice));
  }
}

}  // namespace

Agent::Agent(AgentConfig config, GpuInventory gpus, AgentDeps deps)
    : config_(std::move(config)),
      clock_(deps.clock),
      launcher_(deps.launcher),
      master_(deps.master),
      gpu_sampler_(deps.gpu_sampler),
      task_sampler_(deps.task_sampler),
      memory_cgroups_(deps.memory_cgroups),
      uploads_(std::make_unique<ArtifactUploads>(
          config_.data_dir + "/uploads", clock_,
          deps.open_store ? deps.open_store : StoreOpener(store::OpenStore))),
      prefetcher_(std::make_unique<DatasetPrefetcher>(
          config_.data_dir + "/cache", config_.dataset_cache_bytes,
          deps.open_store ? std::move(deps.open_store) : StoreOpener(store::OpenStore))) {
  config_.node.gpus = std::move(gpus.gpus);
  config_.node.gpu_links = std::move(gpus.links);
  config_.node.gpu_source = gpus.source;
  // The scheduler places tasks in images only on nodes that say they run them.
  std::erase_if(config_.node.labels,
                [](const auto& l) { return l.first.starts_with(kReservedLabelPrefix); });
  if (config_.containers) {
    config_.node.labels[std::string(kRuntimeLabel)] = std::string(kPodmanRuntime);
  }
}

Agent::~Agent() = default;

Status Agent::Start() {
  accounts_ = TaskAccounts::OfThisProcess(config_.allow_root_tasks, config_.node.id);
  spdlog::info("{}", accounts_->Describe());
  COHORT_RETURN_IF_ERROR(PrepareDataDir());
  COHORT_RETURN_IF_ERROR(LoadInstance());
  {
    // Fenced tasks adopted from an earlier agent get the whole node timeout to hear from the
    // master again: the master's own clock started over with this agent's registration.
    std::lock_guard lock(mu_);
    last_answer_ = clock_.Now();
  }
  AdoptExistingTasks();
  return uploads_->Load();
}

Status Agent::PrepareDataDir() {
  const std::string& dir = config_.data_dir;
  const Owner self{::geteuid(), ::getegid()};
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return Status::Internal(fmt::format("data directory {}: {}", dir, strerror(errno)));
    }
    Status made = EnsureDirectory(dir, 0711, self);
    if (!made.ok()) return Status::Internal("cannot create the data directory " + made.message());
  } else if (!S_ISDIR(st.st_mode) || st.st_uid != self.uid || (st.st_mode & 022) != 0) {
    // Whoever may write in it could swap a task's files for links that the agent then follows.
    return Status::Internal(fmt::format(
        "data directory {} must be a directory of this agent's (uid {}) that no one else may "
        "write in; it is owned by uid {} with mode {:04o}",
        dir, self.uid, st.st_uid, st.st_mode & 07777));
  }
  Status tasks = EnsureDirectory(dir + "/tasks", 0711, self);
  if (!tasks.ok()) return Status::Internal("cannot prepare " + tasks.message());
  return Status::Ok();
}

Status Agent::LoadInstance() {
  // Kept beside the tasks: a data directory that lost one lost the other, and the master must
  // then know that this node's tasks are gone (NodeInfo::instance).
  std::string path = config_.data_dir + "/instance";
  std::ifstream in(path);
  std::string instance;
  if (in && std::getline(in, instance) && !instance.empty()) {
    config_.node.instance = instance;
    return Status::Ok();
  }
  std::random_device random;
  for (int i = 0; i < 4; ++i) instance += fmt::format("{:08x}", random());
  COHORT_RETURN_IF_ERROR(WriteFileAtomically(path, instance + "\n", 0600));
  spdlog::info("new data directory {}: this agent is instance {}", config_.data_dir, instance);
  config_.node.instance = instance;
  return Status::Ok();
}

void Agent::AdoptExistingTasks() {
  std::lock_guard lock(mu_);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(config_.data_dir + "/tasks", ec)) {
    if (!entry.is_directory()) continue;
    std::string dir = entry.path().string();
    if (!fs::exists(dir + "/spec.json")) continue;
    auto id = ParseTaskId(entry.path().filename().string());
    if (!id.ok()) {
      spdlog::warn("ignoring {}: {}", dir, id.status().message());
      continue;
    }
    LocalTask t;
    t.id = *id;
    t.dir = dir;
    t.adopted = true;
    t.supervisor = ReadPidFile(dir + "/supervisor.pid");
    t.pid = ReadPidFile(dir + "/task.pid");
    t.started_at = FromMicros(0);
    t.forgotten = fs::exists(dir + "/" + kForgottenFile);
    if (auto spec = ParseJson(ReadFileOrEmpty(dir + "/spec.json"));
        spec.ok() && spec->is_object()) {
      t.grace_period = std::chrono::milliseconds(spec->value("grace_period_ms", int64_t{30000}));
      t.fence_after = std::chrono::milliseconds(spec->value("fence_after_ms", int64_t{0}));
      t.checkpoints_in_store = spec->contains("checkpoints");
      t.in_image = spec->contains("container");
    }
    t.store_json = ReadFileOrEmpty(dir + "/" + kStoreAccessFile);
    if (auto upload = ParseJson(ReadFileOrEmpty(dir + "/" + kUploadFile));
        upload.ok() && upload->is_object()) {
      t.outputs_key = upload->value("outputs_key", "");
      t.output_dir = upload->value("output_dir", "");
    }
    auto exit = ReadTaskExit(dir);
    if (exit.ok()) {
      t.exit = *exit;
    } else if (!launcher_.IsSupervisorOf(t.supervisor, dir)) {
      t.exit = TaskExit{std::nullopt, std::nullopt, false, {}, {}};
      RemoveLeftContainer(t);
    }
    spdlog::info("adopted task {} ({})", t.id.ToString(), t.exit ? "ended" : "running");
    tasks_[t.id] = std::move(t);
  }
}

void Agent::RemoveLeftContainer(const LocalTask& t) {
  if (!t.in_image) return;
  auto spec = ParseJson(ReadFileOrEmpty(t.dir + "/spec.json"));
  if (!spec.ok() || !spec->is_object() || !spec->contains("container")) return;
  auto c = ContainerTaskFromJson((*spec)["container"]);
  if (!c.ok()) return;
  int status = launcher_.RunCleanup(PodmanRemoveCommand(*c));
  spdlog::info("task {}: its supervisor is gone: removed its container {} (status {})",
               t.id.ToString(), c->name, status);
}

void Agent::FillCachedImages(AgentReport& report) {
  if (!config_.containers || config_.containers->cache_dir.empty()) return;
  // A listing of the cache's records at most every few seconds, not at every exchange.
  const Timestamp now = clock_.Now();
  if (images_sent_ && !images_changed_ && now - images_listed_at_ < kImageListingEvery) return;
  images_listed_at_ = now;
  images_changed_ = false;
  std::vector<std::string> images;
  for (const CachedImage& i :
       CachedImages(config_.containers->cache_dir, kMaxCachedImagesPerReport)) {
    images.push_back(i.image);
  }
  if (images_sent_ && *images_sent_ == images && now - images_sent_at_ < std::chrono::minutes(1)) {
    return;
  }
  report.cached_images = images;
  images_sent_ = std::move(images);
  images_sent_at_ = now;
}

void Agent::NotStarted(LocalTask& t, const char* what, const std::string& why,
                       std::optional<StartFailure> kind) {
  spdlog::error("task {}: the agent {} it: {}", t.id.ToString(), what, why);
  // Best effort: the report carries the reason whether or not the output could be written.
  Status written = WriteFileAtomically(
      t.dir + "/output.log", fmt::format("cohort: the agent {} the task: {}\n", what, why), 0600);
  if (!written.ok()) {
    spdlog::warn("task {}: its output will not say why: {}", t.id.ToString(), written.message());
  }
  t.exit = NeverRan(t.started_at, why, kind);
}

void Agent::Launch(const TaskLaunch& given, Duration node_timeout) {
  TaskLaunch launch = given;
  // A job whose checkpoints go through the store keeps them on this node between pushes: its
  // next attempt, wherever it lands, restores them from the store (agent/checkpoint_sync.h).
  const bool checkpoints_in_store = !launch.checkpoints_key.empty();
  if (checkpoints_in_store) {
    launch.checkpoint_dir = LocalCheckpointDir(config_.data_dir, launch.id.job);
    launch.env["COHORT_CHECKPOINT_DIR"] = launch.checkpoint_dir;
  }
  LocalTask t;
  t.id = launch.id;
  t.dir = fmt::format("{}/tasks/{}", config_.data_dir, launch.id.ToString());
  t.grace_period = launch.grace_period;
  if (launch.fence) t.fence_after = node_timeout;
  t.started_at = clock_.Now();
  // Fills in `t` and records it however the launch goes.
  auto launch_into = [&]() {
    // The agent's (0711): the task's account reaches its scratch directory inside, and can
    // list or read nothing else (docs/security.md).
    Status made = RemoveTaskDir(t.dir);
    if (made.ok()) made = EnsureDirectory(t.dir, 0711, Owner{::geteuid(), ::getegid()});
    if (!made.ok()) {
      spdlog::error("task {}: cannot create its directory: {}", t.id.ToString(), made.message());
      t.exit = NeverRan(t.started_at,
                        "the agent could not prepare the task's directory: " + made.message());
      return;
    }
    // The master checks workdirs too; a task that would run outside its directory all the same
    // fails with the reason in its log, rather than run somewhere it was never meant to.
    if (auto problem = WorkdirProblem(launch.workdir)) {
      return NotStarted(t, "refused to start",
                        fmt::format("workdir \"{}\" {}", launch.workdir, *problem));
    }
    auto account = accounts_->Resolve(launch.run_as, t.dir + "/work");
    if (!account.ok()) {
      // No such account here: the node's, not the job's (another node may have it).
      bool absent = account.status().code() == StatusCode::kNotFound;
      return NotStarted(t, "refused to start", account.status().message(),
                        absent ? std::optional(StartFailure::kAccount) : std::nullopt);
    }
    if (checkpoints_in_store) {
      // The account reaches its own job's directory through these, and lists none of them.
      const std::string job_dir = fs::path(launch.checkpoint_dir).parent_path().string();
      Status made = EnsureDirectory(fs::path(job_dir).parent_path().string(), 0711,
                                    Owner{::geteuid(), ::getegid()});
      if (made.ok()) made = EnsureDirectory(job_dir, 0711, Owner{::geteuid(), ::getegid()});
      if (!made.ok()) return NotStarted(t, "could not start", made.message());
    }
    auto job_dirs = PrepareJobDirectories(launch, *account, accounts_->root());
    if (!job_dirs.ok()) {
      return NotStarted(t, "could not start", job_dirs.status().message());
    }
    std::map<std::string, std::string> env = launch.env;
    // The job's code is unpacked where the task starts, unless its group names a workdir, which
    // wins (docs/data.md, "Code").
    const std::string context_key = launch.workdir.empty() ? launch.context_key : "";
    if (!launch.datasets.empty()) env["COHORT_DATA_DIR"] = TaskDataDir(t.dir);
    if (!launch.hparams.empty()) {
      // A sweep trial's values (docs/sweeps.md), readable by the task's account: no secret.
      std::string path = t.dir + "/hparams.json";
      if (Status s = WriteFileAtomically(path, launch.hparams, 0644, Durability::kProcessCrash);
          !s.ok()) {
        return NotStarted(t, "could not start", s.message());
      }
      env["COHORT_HPARAMS"] = path;
    }
    // A framework's files (an MPI hostfile), readable by the task's account: no secret.
    for (const TaskFile& file : launch.files) {
      std::string path = t.dir + "/" + file.name;
      if (Status s = WriteFileAtomically(path, file.content, 0644, Durability::kProcessCrash);
          !s.ok()) {
        return NotStarted(t, "could not start", s.message());
      }
      for (const std::string& name : file.env) env[name] = path;
    }
    std::vector<std::string> command = launch.command;
    std::string path_prefix;
    if (launch.tools || launch.slurm_tools || launch.exec_service) {
      if (config_.tools_dir.empty()) {
        return NotStarted(t, "refused to start",
                          "this agent has no task tools (cohort-exec in tools/ beside cohortd), "
                          "which the tasks of MPI and Slurm jobs need");
      }
      path_prefix = config_.tools_dir;
      // srun and scontrol are cohort-exec under their names, in a directory of their own.
      if (launch.slurm_tools) path_prefix = config_.tools_dir + "/slurm:" + path_prefix;
    }
    if (launch.exec_service) {
      // The task's command, if any, runs beside the service, which ends with it.
      std::vector<std::string> served = {config_.tools_dir + "/cohort-exec", "serve"};
      if (!command.empty()) served.push_back("--");
      served.insert(served.end(), command.begin(), command.end());
      command = std::move(served);
    }
    if (launch.terminal) {
      // A shell session's task is the agent's terminal server (terminal/terminal_server.h),
      // linked static so that it runs in the task's image as well as on the node.
      if (config_.tools_dir.empty() ||
          ::access((config_.tools_dir + "/" + kTerminalProgram).c_str(), X_OK) != 0) {
        return NotStarted(t, "refused to start",
                          fmt::format("this agent has no {} in tools/ beside cohortd, which "
                                      "shell sessions need",
                                      kTerminalProgram));
      }
      command = {config_.tools_dir + "/" + kTerminalProgram, "serve"};
    }
    if (command.empty()) {
      return NotStarted(t, "refused to start", "the task has no command");
    }
    std::optional<ContainerTask> container;
    if (!launch.image.empty()) {
      if (!config_.containers) {
        return NotStarted(t, "refused to start",
                          fmt::format("the task runs in image {}, and this node runs no "
                                      "containers (cohortd agent --runtime podman)",
                                      launch.image));
      }
      container = ContainerTaskFor(*config_.containers, config_.node.instance, launch, t.dir,
                                   *job_dirs, config_.data_dir + "/cache");
      // The terminal server runs inside from where it lies on the node, mounted read-only.
      if (launch.terminal) container->mounts.push_back(ContainerMount{command[0], true});
      if (env.count("CUDA_VISIBLE_DEVICES") && !launch.gpus.empty()) {
        env["CUDA_VISIBLE_DEVICES"] = ContainerVisibleDevices(launch.gpus, config_.node.gpus);
      }
    }
    Json spec{{"command", command},
              {"env", env},
              {"workdir", launch.workdir},
              {"grace_period_ms", ToMillis(launch.grace_period)},
              {"output_limit_bytes", config_.log_limit},
              {"uid", account->uid},
              {"gid", account->gid},
              {"user", account->name},
              {"home", account->home},
              {"shell", account->shell},
              {"job_dirs", *job_dirs},
              {"fence_after_ms", ToMillis(t.fence_after)}};
    if (!path_prefix.empty()) spec["path_prefix"] = path_prefix;
    if (container) spec["container"] = ToJson(*container);
    t.in_image = container.has_value();
    if (checkpoints_in_store) {
      CheckpointSyncSpec sync;
      sync.dir = launch.checkpoint_dir;
      sync.key = launch.checkpoints_key;
      sync.attempt = launch.id.attempt;
      sync.restore = launch.id.attempt > 1;
      // The directory is the job's: its first task, rank 0, pushes it; every task restores it.
      sync.push = env.count("COHORT_TASK_RANK") && env.at("COHORT_TASK_RANK") == "0";
      sync.prompt_bytes = config_.checkpoint_prompt_bytes;
      sync.large_every = config_.checkpoint_interval;
      sync.final_limit = config_.checkpoint_final_limit;
      spec["checkpoints"] = ToJson(sync);
      t.checkpoints_in_store = true;
      if (!launch.store.empty()) {
        t.store_json = ToJson(launch.store).dump();
        // 0600, the agent's: the store's credentials, which the task never sees.
        if (Status s = WriteFileAtomically(t.dir + "/" + kStoreAccessFile, t.store_json, 0600,
                                           Durability::kProcessCrash);
            !s.ok()) {
          return NotStarted(t, "could not start", s.message());
        }
      }
    }
    if (!launch.datasets.empty() || !context_key.empty()) {
      TaskInputsSpec inputs;
      inputs.cache_dir = config_.data_dir + "/cache";
      inputs.cache_bytes = config_.dataset_cache_bytes;
      inputs.datasets = launch.datasets;
      inputs.context_key = context_key;
      spec["inputs"] = ToJson(inputs);
    }
    // A container's memory limit is podman's (ContainerTask::memory_bytes).
    if (memory_cgroups_ && launch.memory_limit_bytes > 0 && !container) {
      spec["memory"] = TaskMemoryJson(TaskMemorySpec{
          launch.memory_limit_bytes, memory_cgroups_->version(), memory_cgroups_->parent()});
    }
    // 0600: the environment may hold the job's secrets.
    // Read at once by the supervisor; a reboot ends the task, so it need not survive one.
    if (Status s =
            WriteFileAtomically(t.dir + "/spec.json", spec.dump(), 0600, Durability::kProcessCrash);
        !s.ok()) {
      return NotStarted(t, "could not start", s.message());
    }
    auto pid = launcher_.StartSupervisor(t.dir);
    if (!pid.ok()) {
      spdlog::error("task {}: {}", t.id.ToString(), pid.status().ToString());
      t.exit = NeverRan(t.started_at, "the agent could not start the task's supervisor: " +
                                          pid.status().message());
      return;
    }
    t.supervisor = *pid;
    if (!launch.outputs_key.empty() && !launch.output_dir.empty()) {
      Json upload{{"outputs_key", launch.outputs_key}, {"output_dir", launch.output_dir}};
      if (Status s = WriteFileAtomically(t.dir + "/" + kUploadFile, upload.dump(), 0600,
                                         Durability::kProcessCrash);
          !s.ok()) {
        spdlog::warn("task {}: a restarted agent would not upload its job's outputs: {}",
                     t.id.ToString(), s.message());
      }
      t.outputs_key = launch.outputs_key;
      t.output_dir = launch.output_dir;
    }
    if (Status s = WriteFileAtomically(t.dir + "/supervisor.pid", std::to_string(*pid), 0600,
                                       Durability::kProcessCrash);
        !s.ok()) {
      // A restarted agent would not find the supervisor, and would report the task lost.
      spdlog::warn("task {}: {}", t.id.ToString(), s.message());
    }
    spdlog::info("task {} started as {} (uid {}; supervisor pid {})", t.id.ToString(),
                 account->name, account->uid, *pid);
  };
  launch_into();
  tasks_[t.id] = std::move(t);
}

std::string LocalCheckpointDir(const std::string& data_dir, JobId job) {
  return fmt::format("{}/jobs/{}/checkpoints", data_dir, job);
}

bool Agent::HasTaskOfJob(JobId job) const {
  for (const auto& [id, t] : tasks_) {
    if (id.job == job) return true;
  }
  for (const auto& launch : pending_launches_) {
    if (launch.id.job == job) return true;
  }
  return false;
}

void Agent::RenewStoreAccess(const TaskLaunch& launch) {
  if (launch.store.empty()) return;
  auto it = tasks_.find(launch.id);
  if (it == tasks_.end() || it->second.exit || !it->second.checkpoints_in_store) return;
  LocalTask& t = it->second;
  std::string text = ToJson(launch.store).dump();
  if (text == t.store_json) return;
  // Short-lived credentials, renewed by the master before they expire: the supervisor reads
  // them before each push.
  Status written =
      WriteFileAtomically(t.dir + "/" + kStoreAccessFile, text, 0600, Durability::kProcessCrash);
  if (!written.ok()) {
    spdlog::warn("task {}: its checkpoints keep the store's old access: {}", t.id.ToString(),
                 written.message());
    return;
  }
  t.store_json = std::move(text);
}

void Agent::Apply(const DesiredState& desired) {
  for (const auto& [id, access] : desired.allow_uploads) uploads_->Allow(id, access);
  for (const auto& [id, reason] : desired.refuse_uploads) uploads_->Refuse(id, reason);
  for (const auto& id : desired.forget_uploads) uploads_->Forget(id);
  std::lock_guard lock(mu_);
  last_answer_ = clock_.Now();
  for (const auto& id : desired.forget) {
    auto it = tasks_.find(id);
    if (it == tasks_.end() || !it->second.exit) continue;
    LocalTask& t = it->second;
    if (t.shipped < FileSize(t.dir + "/output.log")) {
      // Its end was reported before all of its output was shipped: the rest still goes.
      if (!t.forgotten && !WriteFileAtomically(t.dir + "/" + kForgottenFile, "", 0600).ok()) {
        spdlog::warn(
            "task {}: cannot mark its directory forgotten; a restarted agent would "
            "report it again",
            id.ToString());
      }
      t.forgotten = true;
      continue;
    }
    discarded_dirs_.push_back(t.dir);
    const bool local_checkpoints = t.checkpoints_in_store;
    tasks_.erase(it);
    // Its checkpoints are in the store: the next attempt restores them from there.
    if (local_checkpoints) discarded_job_dirs_.push_back(id.job);
  }
  // Answers may cross on the two connections; an older desired state must not undo a newer one.
  if (desired.version < applied_version_) return;
  prefetcher_->Want(desired.prefetch);
  // Only a newer version starts tasks. A task's end changes no version, so an answer of the
  // version already applied may have been made before some of its tasks ended, and arrive after
  // the one that had them forgotten: started from it, an ended task would run a second time.
  // Everything that adds a task to a node raises its version.
  const bool newer = desired.version > applied_version_;
  const uint64_t before = applied_version_;
  applied_version_ = desired.version;
  std::set<TaskId> wanted;
  std::set<TaskId> pending;
  for (const auto& launch : pending_launches_) pending.insert(launch.id);
  for (const auto& launch : desired.tasks) {
    wanted.insert(launch.id);
    RenewStoreAccess(launch);
    if (!newer || tasks_.count(launch.id) || pending.count(launch.id)) continue;
    // Made by the main loop, a few a round (LaunchPending).
    if (pending_launches_.empty()) version_before_launches_ = before;
    pending_launches_.push_back(launch);
    pending_node_timeout_ = desired.node_timeout;
  }
  // Placed tasks start in milliseconds, not at the main loop's next poll.
  if (!pending_launches_.empty()) WakeMainLoop();
  // A task stopped before it was started never starts; it ended as a stopped one does.
  for (auto it = pending_launches_.begin(); it != pending_launches_.end();) {
    if (wanted.count(it->id)) {
      ++it;
      continue;
    }
    LocalTask t;
    t.id = it->id;
    t.dir = fmt::format("{}/tasks/{}", config_.data_dir, it->id.ToString());
    t.started_at = clock_.Now();
    t.exit = TaskExit{std::nullopt, std::nullopt, true, t.started_at, t.started_at};
    spdlog::info("task {} stopped before it started", t.id.ToString());
    tasks_[t.id] = std::move(t);
    it = pending_launches_.erase(it);
  }
  for (auto& [id, t] : tasks_) {
    if (wanted.count(id) || t.exit || t.stop_sent_at) continue;
    spdlog::info("stopping task {}", id.ToString());
    t.stop_sent_at = clock_.Now();
    if (t.supervisor > 0) launcher_.SignalSupervisor(t.supervisor, SIGTERM);
  }
}

bool Agent::LaunchPending(size_t most, bool* launched) {
  std::lock_guard lock(mu_);
  if (launched) *launched = !pending_launches_.empty();
  for (size_t n = 0; n < most && !pending_launches_.empty(); ++n) {
    TaskLaunch launch = std::move(pending_launches_.front());
    pending_launches_.pop_front();
    Launch(launch, pending_node_timeout_);
  }
  return !pending_launches_.empty();
}

uint64_t Agent::ReportedVersion() const {
  return pending_launches_.empty() ? applied_version_ : version_before_launches_;
}

bool Agent::DiscardForgotten(size_t most) {
  std::vector<std::string> dirs;
  bool more;
  {
    std::lock_guard lock(mu_);
    while (dirs.size() < most && !discarded_dirs_.empty()) {
      dirs.push_back(std::move(discarded_dirs_.front()));
      discarded_dirs_.pop_front();
    }
    // A job's directory on this node goes with its last task here. Launches happen on this
    // thread, after this: one already asked for (pending) keeps it, a later one makes it anew.
    while (dirs.size() < most && !discarded_job_dirs_.empty()) {
      JobId job = discarded_job_dirs_.front();
      discarded_job_dirs_.pop_front();
      if (HasTaskOfJob(job)) continue;
      dirs.push_back(fs::path(LocalCheckpointDir(config_.data_dir, job)).parent_path().string());
    }
    more = !discarded_dirs_.empty() || !discarded_job_dirs_.empty();
  }
  for (const auto& dir : dirs) DiscardTaskDir(dir);
  return more;
}

AgentReport Agent::BuildReport() {
  std::lock_guard lock(mu_);
  AgentReport report;
  report.applied_version = ReportedVersion();
  // A node with very many tasks still sends a report well within the master's body limit.
  const size_t samples_per_task = std::clamp<size_t>(
      kMaxReportTaskSamples / std::max<size_t>(tasks_.size(), 1), 1, kMaxSamplesPerReport);
  for (auto& [id, t] : tasks_) {
    if (t.forgotten) continue;
    TaskReport r;
    r.id = id;
    r.pid = t.pid;
    r.started_at = t.started_at;
    r.state = TaskState::kRunning;
    // An ended task is reported only once its output is with the master, or at least its size,
    // so that a finished job never lacks the end of its log: readers wait for the rest.
    if (EndReportable(t)) {
      r.state = EndState(*t.exit);
      r.exit_code = t.exit->exit_code;
      r.signal = t.exit->signal;
      r.finished_at = t.exit->finished_at;
      r.message = t.exit->message;
      r.start_failure = t.exit->start_failure;
    }
    // The newest, if there are too many to send them all (acknowledged, the rest is dropped).
    const size_t sent = std::min(t.samples.size(), samples_per_task);
    r.samples.assign(t.samples.end() - static_cast<std::ptrdiff_t>(sent), t.samples.end());
    r.checkpoint_at = t.checkpoints.reported();
    if (t.checkpoints_in_store && !t.restored_from) {
      // Written by its supervisor before the task starts, once (agent/checkpoint_sync.h); a
      // task may end before a report has carried it.
      std::string text = ReadFileOrEmpty(t.dir + "/" + kRestoredFile);
      if (!text.empty()) {
        auto parsed = ParseJson(text);
        auto restored = parsed.ok() ? RestoredCheckpointFromJson(*parsed) : parsed.status();
        if (restored.ok()) t.restored_from = *restored;
      }
    }
    r.restored_from = t.restored_from;
    if (t.in_image && !(t.image_pull && t.image_pull->finished)) {
      // Written by its supervisor every second while it pulls (agent/container_task.h).
      if (auto parsed = ParseJson(ReadFileOrEmpty(t.dir + "/" + kImagePullFile)); parsed.ok()) {
        if (auto pull = ImagePullFromJson(*parsed); pull.ok()) {
          // A finished pull is the image cache changing: its records are listed anew.
          if (pull->finished) images_changed_ = true;
          t.image_pull = std::move(*pull);
        }
      }
    }
    r.image_pull = t.image_pull;
    report.tasks.push_back(std::move(r));
  }
  for (const auto& [index, samples] : gpu_samples_) {
    if (!samples.empty())
      report.gpu_samples.push_back(GpuSamples{index, {samples.begin(), samples.end()}});
  }
  report.uploads = uploads_->Progress();
  // The rest waits for a later report: those ahead of it end and are forgotten.
  if (report.uploads.size() > kMaxUploadsPerReport) report.uploads.resize(kMaxUploadsPerReport);
  prefetcher_->Fill(report, clock_.Now());
  FillCachedImages(report);
  return report;
}

void Agent::SampleResources() {
  Timestamp now = clock_.Now();
  if (next_sample_at_ && now < *next_sample_at_) return;
  next_sample_at_ = now + config_.sample_interval;
  // Kept until a report carries them to the master; a master away for long gets the newest.
  auto keep = [](auto& pending, const auto& sample) {
    pending.push_back(sample);
    while (pending.size() > kMaxSamplesPerReport) pending.pop_front();
  };
  // The samplers read NVML and /proc without the lock, which the sync thread needs.
  std::map<int, GpuSample> gpus;
  if (gpu_sampler_) gpus = gpu_sampler_->Sample(now);
  std::map<TaskId, pid_t> supervisors;
  if (task_sampler_) {
    std::lock_guard lock(mu_);
    for (const auto& [id, t] : tasks_) {
      if (!t.exit && t.supervisor > 0) supervisors[id] = t.supervisor;
    }
  }
  std::map<TaskId, TaskSample> tasks;
  if (task_sampler_) tasks = task_sampler_->Sample(supervisors, now);
  std::lock_guard lock(mu_);
  for (const auto& [index, sample] : gpus) {
    // A GPU of which nothing is known (a declared one) sends nothing: the master shows unknown.
    if (sample.utilization_percent || sample.memory_used_bytes) keep(gpu_samples_[index], sample);
  }
  for (const auto& [id, sample] : tasks) {
    auto it = tasks_.find(id);
    if (it != tasks_.end() && !it->second.exit) keep(it->second.samples, sample);
  }
}

void Agent::Acknowledge(const AgentReport& report) {
  prefetcher_->Acknowledge(report, clock_.Now());
  auto drop_through = [](auto& pending, Timestamp last) {
    while (!pending.empty() && pending.front().at <= last) pending.pop_front();
  };
  std::lock_guard lock(mu_);
  for (const auto& r : report.tasks) {
    auto it = tasks_.find(r.id);
    if (it != tasks_.end() && !r.samples.empty())
      drop_through(it->second.samples, r.samples.back().at);
  }
  for (const auto& g : report.gpu_samples) {
    if (!g.samples.empty()) drop_through(gpu_samples_[g.index], g.samples.back().at);
  }
}

void Agent::Fence(Timestamp now) {
  const Duration silent = now - last_answer_;
  for (auto& [id, t] : tasks_) {
    if (t.exit || t.stop_sent_at || t.fence_after <= Duration(0) || silent <= t.fence_after) {
      continue;
    }
    // The master has declared this node lost by now, or is about to, and starts the job's next
    // attempt elsewhere: this one must not run beside it for longer than its grace period.
    std::string why = fmt::format(
        "fenced: cut off from the master for {}, longer than the node timeout of {}; the job "
        "asked for restart.fence, so its tasks stop rather than run beside its next attempt",
        FormatDuration(silent), FormatDuration(t.fence_after));
    spdlog::warn("stopping task {}: {}", id.ToString(), why);
    // Appended to the task's own output, which reaches the master when this node is back.
    const std::string line = "\ncohort: " + why + "\n";
    int fd = ::open((t.dir + "/output.log").c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
      (void)!::write(fd, line.data(), line.size());
      ::close(fd);
    }
    t.stop_why = std::move(why);
    t.stop_sent_at = now;
    if (t.supervisor > 0) launcher_.SignalSupervisor(t.supervisor, SIGTERM);
  }
}

bool Agent::CheckTasks(bool* more) {
  std::lock_guard lock(mu_);
  bool changed = false;
  size_t exits = 0;
  if (more) *more = false;
  Timestamp now = clock_.Now();
  Fence(now);
  for (auto& [id, t] : tasks_) {
    if (t.exit) continue;
    if (t.pid == 0) {
      t.pid = ReadPidFile(t.dir + "/task.pid");
      changed |= t.pid != 0;  // worth telling the master at once
    }
    if (exits == kExitsPerRound) {
      // The rest are looked at in the next round, which starts at once.
      if (more) *more = true;
      continue;
    }
    if (!launcher_.SupervisorExited(t.supervisor, t.adopted)) {
      if (t.stop_sent_at && now - *t.stop_sent_at > t.grace_period + kSupervisorSlack) {
        spdlog::warn("task {}: supervisor did not stop it in time; killing everything",
                     id.ToString());
        launcher_.SignalProcessGroup(t.supervisor, SIGKILL);
        if (t.pid > 0) launcher_.SignalProcessGroup(t.pid, SIGKILL);
      }
      continue;
    }
    ++exits;
    auto exit = ReadTaskExit(t.dir);
    if (exit.ok()) {
      t.exit = *exit;
      if (t.exit->message.empty()) t.exit->message = t.stop_why;
    } else {
      spdlog::error("task {}: its supervisor ended without recording an exit", id.ToString());
      t.exit = TaskExit{std::nullopt, std::nullopt, t.stop_sent_at.has_value(), t.started_at, now};
      RemoveLeftContainer(t);
    }
    spdlog::info("task {} ended: {}", id.ToString(),
                 t.exit->signal ? fmt::format("signal {}", *t.exit->signal)
                                : fmt::format("exit code {}", t.exit->exit_code.value_or(-1)));
    changed = true;
  }
  return changed;
}

bool Agent::EndReportable(const LocalTask& t) const {
  return t.exit && (t.end_announced || t.shipped >= FileSize(t.dir + "/output.log"));
}

int64_t Agent::BacklogLimit() const {
  int64_t master = master_log_limit_;
  return master > 0 ? std::min(master, config_.log_limit) : config_.log_limit;
}

bool Agent::ShipLogs() {
  std::vector<Shipment> work;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, t] : tasks_) {
      if (FileSize(t.dir + "/output.log") > t.shipped) {
        work.push_back(
            Shipment{id, t.dir + "/output.log", t.shipped, t.exit.has_value(), t.end_announced});
      }
    }
  }
  for (auto& s : work) Ship(s);
  bool reportable = false;
  std::lock_guard lock(mu_);
  for (const auto& s : work) {
    auto it = tasks_.find(s.id);
    if (it == tasks_.end()) continue;
    it->second.shipped = std::max(it->second.shipped, s.shipped);
    it->second.end_announced |= s.end_announced;
  }
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    LocalTask& t = it->second;
    if (t.forgotten && t.shipped >= FileSize(t.dir + "/output.log")) {
      DiscardTaskDir(t.dir);
      it = tasks_.erase(it);
      continue;
    }
    if (!t.reported_end && EndReportable(t)) {
      t.reported_end = true;
      reportable = true;
    }
    ++it;
  }
  return reportable;
}

void Agent::Ship(Shipment& s) {
  int raw = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw < 0) return;
  struct stat st {};
  ::fstat(raw, &st);
  int64_t size = st.st_size;
  // Once the task has ended its output no longer grows; the master learns its final size with
  // every upload, and the end waits for the rest only if little is left.
  std::optional<int64_t> end;
  if (s.ended) end = size;
  int64_t budget = config_.ship_per_round;
  if (s.ended && size - s.shipped <= config_.ship_before_end) {
    budget = std::max(budget, size - s.shipped);
  }
  int64_t limit = BacklogLimit();
  bool skip = false;
  int64_t from = s.shipped;
  std::string buf;
  // Bounded, in case the master keeps sending the agent elsewhere.
  for (int round = 0; round < 64; ++round) {
    int64_t kept = FirstKeptByte(raw, size);
    if (size - from > limit) {
      from = size - limit;  // the master would drop the rest again
      skip = true;
    }
    if (from < kept) {
      from = kept;  // trimmed off the disk already
      skip = true;
    }
    if (from >= size || budget <= 0) break;
    buf.resize(
        static_cast<size_t>(std::clamp<int64_t>(std::min(size - from, budget), 0, kShipChunk)));
    ssize_t got = ::pread(raw, buf.data(), buf.size(), from);
    if (got <= 0) break;
    buf.resize(static_cast<size_t>(got));
    if (FirstKeptByte(raw, size) > from) continue;  // trimmed while being read: read again
    int64_t resume_at = -1;
    auto stored =
        master_.ShipLog(config_.node.id, s.id, LogUpload{from, buf, skip, end}, &resume_at);
    if (stored.ok()) {
      if (stored->limit > 0) master_log_limit_ = stored->limit;
      s.shipped = stored->size;
      s.end_announced |= s.ended;
      budget -= got;
      from = s.shipped;
      skip = false;
      continue;
    }
    if (resume_at >= 0) {
      from = resume_at;
      s.shipped = resume_at;
      continue;
    }
    if (stored.status().code() == StatusCode::kNotFound) {
      s.shipped = size;  // the job is gone: the output has nowhere to go
      s.end_announced |= s.ended;
    } else {
      spdlog::debug("shipping output of {}: {}", s.id.ToString(), stored.status().ToString());
    }
    break;
  }
  ::close(raw);
}

Status Agent::SyncOnce(Duration wait) {
  if (!registered_) {
    auto desired = master_.Register(config_.node);
    if (!desired.ok()) return desired.status();
    spdlog::info("registered with the master as {} ({} GPUs, {})", config_.node.id,
                 config_.node.gpus.size(), config_.node.gpu_source);
    registered_ = true;
    Apply(*desired);
    return Status::Ok();
  }
  AgentReport report = BuildReport();
  // The long poll waits for a version newer than the last one taken, launched or not: one that
  // is still launching must not bring back the same answer at once.
  uint64_t known;
  {
    std::lock_guard lock(mu_);
    known = applied_version_;
  }
  auto desired = master_.Sync(config_.node.id, report, known, wait);
  if (!desired.ok()) {
    // The master does not know this node (a new master): register again.
    if (desired.status().code() == StatusCode::kNotFound) registered_ = false;
    return desired.status();
  }
  Acknowledge(report);
  Apply(*desired);
  return Status::Ok();
}

std::unique_ptr<TaskMetrics> Agent::MetricsFor(const TaskId& id, const std::string& dir) {
  std::string event_dir;
  auto spec = ParseJson(ReadFileOrEmpty(dir + "/spec.json"));
  if (spec.ok() && spec->contains("env") && (*spec)["env"].is_object()) {
    const Json& env = (*spec)["env"];
    // The job's log directory is shared by its tasks: one of them, rank 0, ships its files.
    if (env.value("COHORT_TASK_RANK", "") == "0") event_dir = env.value("COHORT_LOG_DIR", "");
  }
  int64_t from =
      ParseInteger(Trim(ReadFileOrEmpty(dir + "/metrics.offset")), 0, INT64_MAX).value_or(0);
  // A later attempt finds the files of the earlier ones, which their tasks shipped.
  return std::make_unique<TaskMetrics>(dir + "/output.log", event_dir, from, id.attempt > 1);
}

void Agent::ShipMetrics() {
  struct Live {
    TaskId id;
    std::string dir;
    bool ended;
  };
  std::vector<Live> live;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, t] : tasks_) live.push_back(Live{id, t.dir, t.exit.has_value()});
  }
  for (auto it = metrics_.begin(); it != metrics_.end();) {
    bool gone = std::none_of(live.begin(), live.end(), [&](auto& l) { return l.id == it->first; });
    it = gone ? metrics_.erase(it) : std::next(it);
  }
  const double now = static_cast<double>(ToMicros(clock_.Now())) / 1e6;
  for (const auto& [id, dir, ended] : live) {
    auto& collector = metrics_[id];
    if (!collector) collector = MetricsFor(id, dir);
    collector->Collect(now, ended);
    if (auto at = collector->TakeCheckpoint()) {
      line_checkpoints_[id] = FromMicros(static_cast<int64_t>(*at * 1e6));
    }
    if (auto step = collector->TakeCheckpointStep()) {
      // For the supervisor that pushes the job's checkpoints: the step its snapshot is of.
      Status written = WriteFileAtomically(dir + "/" + kCheckpointStepFile, std::to_string(*step),
                                           0600, Durability::kProcessCrash);
      if (!written.ok()) spdlog::warn("task {}: {}", id.ToString(), written.message());
    }
    for (const auto& problem : collector->TakeProblems()) {
      spdlog::warn("task {}: metrics: {} at byte {}: {}", id.ToString(),
                   problem.file.empty() ? "the log directory" : problem.file, problem.offset,
                   problem.what);
    }
    while (collector->backlog() > 0) {
      auto batch = collector->Next(kMaxMetricBatchPoints);
      auto shipped = master_.ShipMetrics(config_.node.id, id, batch);
      if (shipped.ok()) {
        collector->Shipped(batch.size());
        if (shipped->dropped > 0 && !metric_drop_told_) {
          spdlog::warn("task {}: the master dropped {} metric points: {}", id.ToString(),
                       shipped->dropped, shipped->why_dropped);
          metric_drop_told_ = true;
        }
        continue;
      }
      if (shipped.status().code() == StatusCode::kNotFound) {
        collector->Discard();  // the job is gone: the points have nowhere to go
      } else {
        spdlog::debug("shipping metrics of {}: {}", id.ToString(), shipped.status().ToString());
      }
      break;
    }
    // What was read is with the master: a restarted agent starts reading after it.
    if (collector->backlog() == 0 && collector->output_read() != collector->output_saved()) {
      // Not kept (not saved, or lost to a crash of the machine): a restarted agent reads again
      // from the last kept offset, and the master drops the points it has
      // (docs/observability.md); so no fsync, and a failure is tried again next round.
      Status saved =
          WriteFileAtomically(dir + "/metrics.offset", std::to_string(collector->output_read()),
                              0600, Durability::kProcessCrash);
      if (saved.ok()) {
        collector->set_output_saved(collector->output_read());
      } else {
        spdlog::debug("task {}: {}", id.ToString(), saved.message());
      }
    }
  }
}

std::unique_ptr<CheckpointWatch> Agent::CheckpointWatchFor(const std::string& dir,
                                                           Timestamp since) {
  auto spec = ParseJson(ReadFileOrEmpty(dir + "/spec.json"));
  if (!spec.ok() || !spec->contains("env") || !(*spec)["env"].is_object()) return nullptr;
  const Json& env = (*spec)["env"];
  // The directory is the job's, shared by its tasks: one of them, rank 0, watches it.
  if (env.value("COHORT_TASK_RANK", "") != "0") return nullptr;
  std::string checkpoints = env.value("COHORT_CHECKPOINT_DIR", "");
  if (checkpoints.empty()) return nullptr;
  return std::make_unique<CheckpointWatch>(checkpoints, since);
}

bool Agent::WatchCheckpoints() {
  const Timestamp now = clock_.Now();
  std::map<TaskId, Timestamp> noticed = std::exchange(line_checkpoints_, {});
  if (!next_checkpoint_look_at_ || now >= *next_checkpoint_look_at_) {
    next_checkpoint_look_at_ = now + config_.sample_interval;
    // An adopted task's start is unknown (0): what its directory holds counts, and the master
    // ignores a checkpoint it already has.
    std::map<TaskId, std::pair<std::string, Timestamp>> running;
    {
      std::lock_guard lock(mu_);
      for (const auto& [id, t] : tasks_) {
        if (!t.exit) running[id] = {t.dir, t.started_at};
      }
    }
    // The directory is looked at without the lock, which the sync thread needs: on a network
    // file system a look can take a while.
    std::erase_if(checkpoint_watches_, [&](const auto& w) { return !running.count(w.first); });
    for (const auto& [id, task] : running) {
      auto [it, added] = checkpoint_watches_.try_emplace(id);
      if (added) it->second = CheckpointWatchFor(task.first, task.second);
      if (!it->second) continue;
      if (auto at = it->second->Look(now)) {
        noticed[id] = std::max(noticed.count(id) ? noticed[id] : *at, *at);
      }
      if (it->second->truncated() && !checkpoint_truncation_told_) {
        spdlog::warn(
            "task {}: its checkpoint directory has more than {} entries; only the first {} are "
            "watched for checkpoints",
            id.ToString(), kMaxCheckpointEntries, kMaxCheckpointEntries);
        checkpoint_truncation_told_ = true;
      }
    }
  }
  std::lock_guard lock(mu_);
  for (const auto& [id, at] : noticed) {
    auto it = tasks_.find(id);
    if (it != tasks_.end()) it->second.checkpoints.Noticed(at);
  }
  bool moved = false;
  for (auto& [id, t] : tasks_) {
    if (t.forgotten || !t.checkpoints.Advance(now)) continue;
    spdlog::info("task {}: checkpoint at {}", id.ToString(),
                 FormatTimestamp(*t.checkpoints.reported()));
    moved = true;
  }
  return moved;
}

bool Agent::BeginUploads() {
  std::vector<std::pair<TaskId, UploadRequest>> due;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, t] : tasks_) {
      // Only a task that ran: one that never started leaves the job's earlier outputs be.
      if (t.exit && !t.upload_begun && !t.outputs_key.empty() && t.supervisor > 0) {
        due.emplace_back(id, UploadRequest{id.ToString(), t.output_dir, t.outputs_key});
      }
    }
  }
  for (const auto& [id, request] : due) {
    Status begun = uploads_->Begin(request);
    if (!begun.ok()) {
      spdlog::error("task {}: cannot begin the upload of its job's outputs: {}", id.ToString(),
                    begun.message());
    }
    std::lock_guard lock(mu_);
    if (auto it = tasks_.find(id); it != tasks_.end()) it->second.upload_begun = true;
  }
  return !due.empty();
}

void Agent::UploadLoop(const std::atomic<bool>& stop) {
  while (!stop) {
    if (!uploads_->Step()) SleepUnlessStopped(config_.poll_interval * 4, stop);
  }
}

Status Agent::Step() {
  CheckTasks();
  BeginUploads();
  uploads_->Step();
  SampleResources();
  ShipMetrics();
  WatchCheckpoints();
  ShipLogs();
  Status synced = SyncOnce(Duration(0));
  LaunchPending(kLaunchesPerRound);
  DiscardForgotten(kDiscardsPerRound);
  return synced;
}

void Agent::SyncLoop(const std::atomic<bool>& stop) {
  bool waiting_told = false;  // "waiting for the master" was logged
  bool sync_warned = false;   // "cannot sync" was logged
  Duration register_delay = std::chrono::milliseconds(100);
  while (!stop) {
    bool was_registered = registered_;
    Status s = SyncOnce(config_.sync_wait);
    if (stop) break;  // the call may have been cancelled for it: nothing to tell
    if (s.ok()) {
      if (sync_warned) spdlog::info("the master is back");
      sync_warned = waiting_told = false;
      register_delay = std::chrono::milliseconds(100);
      continue;
    }
    if (!was_registered) {
      // Refusals that retrying the same registration will not change: say so loudly.
      if (s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kUnauthenticated ||
          s.code() == StatusCode::kPermissionDenied) {
        spdlog::error("the master refused this node: {}", s.ToString());
        SleepUnlessStopped(std::chrono::seconds(5), stop);
        continue;
      }
      if (!waiting_told) {
        spdlog::warn("waiting for the master: {}", s.message());
        waiting_told = true;
      }
      SleepUnlessStopped(register_delay, stop);
      register_delay = std::min<Duration>(register_delay * 2, std::chrono::milliseconds(2000));
      continue;
    }
    if (s.code() == StatusCode::kNotFound) continue;  // registers at once on the next round
    if (!sync_warned) {
      spdlog::warn("cannot sync with the master (tasks keep running): {}", s.message());
      sync_warned = true;
    }
    SleepUnlessStopped(std::chrono::seconds(1), stop);
  }
}

Status Agent::Run(const std::atomic<bool>& stop) {
  COHORT_RETURN_IF_ERROR(Start());
  // The long poll lives on its own thread; this one notices exits and ships output, and
  // reports an ended task at once instead of waiting for the poll to come back.
  std::atomic<bool> sync_done{false};
  std::thread sync([this, &stop, &sync_done] {
    SyncLoop(stop);
    sync_done = true;
  });
  // Jobs' outputs go to the store on a thread of their own: a large file never holds up the
  // tasks' exits, logs or reports.
  std::thread uploads([this, &stop] { UploadLoop(stop); });
  // A supervisor that exits wakes this loop at once (SIGCHLD through a pipe), so that a task's
  // end reaches the master in milliseconds rather than at the next poll.
  int wake[2];
  struct sigaction old_action {};
  if (::pipe2(wake, O_NONBLOCK | O_CLOEXEC) == 0) {
    g_wake_fd = wake[1];
    struct sigaction sa {};
    sa.sa_handler = OnChildExited;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGCHLD, &sa, &old_action);
  } else {
    wake[0] = wake[1] = -1;
  }
  bool report_due = false;
  while (!stop) {
    bool exits_left = false;
    bool changed = CheckTasks(&exits_left);
    changed |= BeginUploads();  // the master decides whether they may go
    bool launched = false;
    bool launches_left = LaunchPending(kLaunchesPerRound, &launched);
    bool discards_left = DiscardForgotten(kDiscardsPerRound);
    SampleResources();
    ShipMetrics();
    bool checkpointed = WatchCheckpoints();
    bool completed = ShipLogs();
    // A dataset fetched ahead of its job: the master places the job once it hears.
    changed |= prefetcher_->TakeSettled();
    // A burst of starts or exits is reported once its last batch is done, not once a batch
    // (the sync thread reports meanwhile).
    report_due |= changed || checkpointed || completed || launched;
    const bool busy = exits_left || launches_left || discards_left;
    if (report_due && !exits_left && !launches_left && registered_) {
      report_due = false;
      AgentReport report = BuildReport();
      auto desired = master_.Sync(config_.node.id, report, 0, Duration(0));
      if (desired.ok()) {
        Acknowledge(report);
        Apply(*desired);
      }
    }
    // A round that left work over is followed by the next at once.
    if (wake[0] >= 0) {
      pollfd pfd{wake[0], POLLIN, 0};
      ::poll(&pfd, 1, busy ? 0 : static_cast<int>(ToMillis(config_.poll_interval)));
      char drain[64];
      while (::read(wake[0], drain, sizeof(drain)) > 0) {
      }
    } else if (!busy) {
      std::this_thread::sleep_for(config_.poll_interval);
    }
  }
  // The sync thread may be in a long poll: cut it short, and again until the thread has seen
  // `stop` (a cancel that falls between two of its calls is lost).
  while (!sync_done) {
    master_.CancelCalls();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  sync.join();
  uploads.join();
  if (wake[0] >= 0) {
    ::sigaction(SIGCHLD, &old_action, nullptr);
    g_wake_fd = -1;
    ::close(wake[0]);
    ::close(wake[1]);
  }
  return Status::Ok();
}

}  // namespace cohort::agent
