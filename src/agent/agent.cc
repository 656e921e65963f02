#include "agent/agent.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "model/json.h"
#include "os/process.h"
#include "os/real_clock.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kShipChunk = 1 << 20;

// The write end of the pipe that wakes the agent's loop; -1 until it exists.
std::atomic<int> g_child_exited_fd{-1};

void OnChildExited(int) {
  int fd = g_child_exited_fd.load();
  if (fd >= 0) {
    char c = 1;
    (void)!::write(fd, &c, 1);  // async-signal-safe; a full pipe already means "wake up"
  }
}
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

}  // namespace

Agent::Agent(AgentConfig config, GpuInventory gpus) : config_(std::move(config)) {
  config_.node.gpus = std::move(gpus.gpus);
  config_.node.gpu_links = std::move(gpus.links);
  config_.node.gpu_source = gpus.source;
}

Agent::~Agent() = default;

Status Agent::Prepare() {
  std::error_code ec;
  fs::create_directories(config_.data_dir + "/tasks", ec);
  if (ec) {
    return Status::Internal(
        fmt::format("cannot create {}/tasks: {}", config_.data_dir, ec.message()));
  }
  if (::access(config_.cohortd.c_str(), X_OK) != 0) {
    return Status::Internal(
        fmt::format("cannot execute {} (needed to supervise tasks)", config_.cohortd));
  }
  return Status::Ok();
}

void Agent::AdoptExistingTasks() {
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
    t.supervisor = std::atoi(ReadFileOrEmpty(dir + "/supervisor.pid").c_str());
    t.pid = std::atoi(ReadFileOrEmpty(dir + "/task.pid").c_str());
    t.started_at = FromMicros(0);
    auto exit = ReadTaskExit(dir);
    if (exit.ok()) {
      t.exit = *exit;
    } else {
      std::string cmdline = ReadFileOrEmpty(fmt::format("/proc/{}/cmdline", t.supervisor));
      bool alive = t.supervisor > 0 && cmdline.find("run-task") != std::string::npos &&
                   cmdline.find(dir) != std::string::npos;
      if (!alive) t.exit = TaskExit{std::nullopt, std::nullopt, false, {}, {}};
    }
    spdlog::info("adopted task {} ({})", t.id.ToString(), t.exit ? "ended" : "running");
    tasks_[t.id] = std::move(t);
  }
}

void Agent::Launch(const TaskLaunch& launch) {
  LocalTask t;
  t.id = launch.id;
  t.dir = fmt::format("{}/tasks/{}", config_.data_dir, launch.id.ToString());
  t.grace_period = launch.grace_period;
  t.started_at = FromMicros(ToMicros(RealClock().Now()));
  std::error_code ec;
  fs::remove_all(t.dir, ec);
  fs::create_directories(t.dir, ec);
  Json spec{{"command", launch.command},
            {"env", launch.env},
            {"workdir", launch.workdir},
            {"grace_period_ms", ToMillis(launch.grace_period)}};
  if (ec || !WriteFileAtomically(t.dir + "/spec.json", spec.dump())) {
    spdlog::error("task {}: cannot write its directory {}", t.id.ToString(), t.dir);
    WriteFileAtomically(t.dir + "/output.log",
                        "cohort: the agent could not prepare the task directory\n");
    t.exit = TaskExit{126, std::nullopt, false, t.started_at, t.started_at};
    tasks_[t.id] = std::move(t);
    return;
  }
  auto pid = Spawn({config_.cohortd, "run-task", "--task-dir", t.dir},
                   SpawnOptions{t.dir + "/supervisor.log", /*new_session=*/true, {}});
  if (!pid.ok()) {
    spdlog::error("task {}: {}", t.id.ToString(), pid.status().ToString());
    t.exit = TaskExit{126, std::nullopt, false, t.started_at, t.started_at};
  } else {
    t.supervisor = *pid;
    WriteFileAtomically(t.dir + "/supervisor.pid", std::to_string(*pid));
    spdlog::info("task {} started (supervisor pid {})", t.id.ToString(), *pid);
  }
  tasks_[t.id] = std::move(t);
}

void Agent::Apply(const DesiredState& desired) {
  std::lock_guard lock(mu_);
  for (const auto& id : desired.forget) {
    auto it = tasks_.find(id);
    if (it == tasks_.end() || !it->second.exit) continue;
    std::error_code ec;
    fs::remove_all(it->second.dir, ec);
    tasks_.erase(it);
  }
  // Answers may cross on the two connections; an older desired state must not undo a newer one.
  if (desired.version < applied_version_) return;
  applied_version_ = desired.version;
  std::set<TaskId> wanted;
  for (const auto& launch : desired.tasks) {
    wanted.insert(launch.id);
    if (!tasks_.count(launch.id)) Launch(launch);
  }
  for (auto& [id, t] : tasks_) {
    if (wanted.count(id) || t.exit || t.stop_sent_at) continue;
    spdlog::info("stopping task {}", id.ToString());
    t.stop_sent_at = RealClock().Now();
    if (t.supervisor > 0) ::kill(t.supervisor, SIGTERM);
  }
}

AgentReport Agent::BuildReport() {
  std::lock_guard lock(mu_);
  AgentReport report;
  report.applied_version = applied_version_;
  for (auto& [id, t] : tasks_) {
    TaskReport r;
    r.id = id;
    r.pid = t.pid;
    r.started_at = t.started_at;
    r.state = TaskState::kRunning;
    // An ended task is reported only once its whole output is with the master, so that a
    // finished job never lacks the end of its log.
    if (t.exit && t.shipped >= FileSize(t.dir + "/output.log")) {
      r.state = EndState(*t.exit);
      r.exit_code = t.exit->exit_code;
      r.signal = t.exit->signal;
      r.finished_at = t.exit->finished_at;
    }
    report.tasks.push_back(std::move(r));
  }
  return report;
}

bool Agent::CheckTasks() {
  std::lock_guard lock(mu_);
  bool changed = false;
  Timestamp now = RealClock().Now();
  for (auto& [id, t] : tasks_) {
    if (t.exit) continue;
    if (t.pid == 0) {
      t.pid = std::atoi(ReadFileOrEmpty(t.dir + "/task.pid").c_str());
      changed |= t.pid != 0;  // worth telling the master at once
    }
    bool gone = false;
    if (!t.adopted) {
      int status = 0;
      pid_t r = ::waitpid(t.supervisor, &status, WNOHANG);
      gone = r == t.supervisor || (r < 0 && errno == ECHILD);
    } else {
      gone = ::kill(t.supervisor, 0) != 0 && errno == ESRCH;
    }
    if (!gone) {
      if (t.stop_sent_at && now - *t.stop_sent_at > t.grace_period + kSupervisorSlack) {
        spdlog::warn("task {}: supervisor did not stop it in time; killing everything",
                     id.ToString());
        ::kill(-t.supervisor, SIGKILL);
        if (t.pid > 0) ::kill(-t.pid, SIGKILL);
      }
      continue;
    }
    auto exit = ReadTaskExit(t.dir);
    if (exit.ok()) {
      t.exit = *exit;
    } else {
      spdlog::error("task {}: its supervisor ended without recording an exit", id.ToString());
      t.exit = TaskExit{std::nullopt, std::nullopt, t.stop_sent_at.has_value(), t.started_at, now};
    }
    spdlog::info("task {} ended: {}", id.ToString(),
                 t.exit->signal ? fmt::format("signal {}", *t.exit->signal)
                                : fmt::format("exit code {}", t.exit->exit_code.value_or(-1)));
    changed = true;
  }
  return changed;
}

bool Agent::ShipLogs(client::CohortClient& client) {
  struct Work {
    TaskId id;
    std::string path;
    int64_t shipped;
  };
  std::vector<Work> work;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, t] : tasks_) {
      std::string path = t.dir + "/output.log";
      if (FileSize(path) > t.shipped) work.push_back(Work{id, path, t.shipped});
    }
  }
  for (auto& w : work) {
    int64_t size = FileSize(w.path);
    std::ifstream in(w.path, std::ios::binary);
    while (w.shipped < size && in) {
      std::string buf(static_cast<size_t>(std::min(kShipChunk, size - w.shipped)), '\0');
      in.seekg(w.shipped);
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.resize(static_cast<size_t>(in.gcount()));
      if (buf.empty()) break;
      int64_t resume_at = -1;
      auto stored = client.ShipLog(config_.node.id, w.id, w.shipped, buf, &resume_at);
      if (stored.ok()) {
        w.shipped = *stored;
      } else if (resume_at >= 0) {
        w.shipped = resume_at;
      } else {
        if (stored.status().code() == StatusCode::kNotFound) w.shipped = size;  // job is gone
        spdlog::debug("shipping output of {}: {}", w.id.ToString(), stored.status().ToString());
        break;
      }
    }
  }
  bool completed = false;
  std::lock_guard lock(mu_);
  for (const auto& w : work) {
    auto it = tasks_.find(w.id);
    if (it == tasks_.end()) continue;
    it->second.shipped = std::max(it->second.shipped, w.shipped);
  }
  for (auto& [id, t] : tasks_) {
    if (t.exit && !t.reported_end && t.shipped >= FileSize(t.dir + "/output.log")) {
      t.reported_end = true;
      completed = true;
    }
  }
  return completed;
}

Status Agent::RegisterUntilDone(client::CohortClient& client, const std::atomic<bool>& stop) {
  bool told = false;
  auto delay = std::chrono::milliseconds(100);
  while (!stop) {
    auto desired = client.Register(config_.node);
    if (desired.ok()) {
      spdlog::info("registered with {} as {} ({} GPUs, {})", client.master_url(), config_.node.id,
                   config_.node.gpus.size(), config_.node.gpu_source);
      registered_ = true;
      Apply(*desired);
      return Status::Ok();
    }
    if (desired.status().code() == StatusCode::kInvalidArgument) return desired.status();
    if (!told) {
      spdlog::warn("waiting for the master: {}", desired.status().message());
      told = true;
    }
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::milliseconds(2000));
  }
  return Status::Ok();
}

void Agent::SyncLoop(const std::atomic<bool>& stop) {
  auto client = client::CohortClient::Create(config_.master_url);
  if (!client.ok()) return;
  bool warned = false;
  while (!stop) {
    if (!registered_) {
      Status s = RegisterUntilDone(**client, stop);
      if (!s.ok()) {
        spdlog::error("the master refused this node: {}", s.ToString());
        std::this_thread::sleep_for(std::chrono::seconds(5));
      }
      continue;
    }
    AgentReport report = BuildReport();
    auto desired =
        (*client)->Sync(config_.node.id, report, report.applied_version, config_.sync_wait);
    if (desired.ok()) {
      if (warned) spdlog::info("the master is back");
      warned = false;
      Apply(*desired);
      continue;
    }
    if (desired.status().code() == StatusCode::kNotFound) {
      registered_ = false;  // the master does not know this node (a new master): register again
      continue;
    }
    if (!warned) {
      spdlog::warn("cannot sync with the master (tasks keep running): {}",
                   desired.status().message());
      warned = true;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

Status Agent::Run(const std::atomic<bool>& stop) {
  COHORT_RETURN_IF_ERROR(Prepare());
  COHORT_ASSIGN_OR_RETURN(auto client, client::CohortClient::Create(config_.master_url));
  AdoptExistingTasks();
  // The long poll lives on its own thread; this one notices exits and ships output, and
  // reports an ended task at once instead of waiting for the poll to come back.
  std::thread sync([this, &stop] { SyncLoop(stop); });
  sync.detach();  // may sit in a long poll; it only touches this object under mu_
  // A supervisor that exits wakes this loop at once (SIGCHLD through a pipe), so that a task's
  // end reaches the master in milliseconds rather than at the next poll.
  int wake[2];
  if (::pipe2(wake, O_NONBLOCK | O_CLOEXEC) == 0) {
    g_child_exited_fd = wake[1];
    struct sigaction sa {};
    sa.sa_handler = OnChildExited;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGCHLD, &sa, nullptr);
  } else {
    wake[0] = wake[1] = -1;
  }
  while (!stop) {
    bool changed = CheckTasks();
    bool completed = ShipLogs(*client);
    if ((changed || completed) && registered_) {
      auto desired = client->Sync(config_.node.id, BuildReport(), 0, Duration(0));
      if (desired.ok()) Apply(*desired);
    }
    if (wake[0] >= 0) {
      pollfd pfd{wake[0], POLLIN, 0};
      ::poll(&pfd, 1, static_cast<int>(ToMillis(config_.poll_interval)));
      char drain[64];
      while (::read(wake[0], drain, sizeof(drain)) > 0) {
      }
    } else {
      std::this_thread::sleep_for(config_.poll_interval);
    }
  }
  return Status::Ok();
}

}  // namespace cohort::agent
