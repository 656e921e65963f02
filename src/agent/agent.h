// The node agent: registers its machine with the master, then keeps what runs here equal to
// what the master wants (docs/architecture.md, "Reconciliation"). It starts each task under its
// own supervisor process (task_supervisor.h), ships task output to the master, and reports exits.
//
// Tasks outlive the agent: stopping or restarting the agent leaves them running, and a new agent
// on the same data directory adopts them.
//
// Everything the agent does to the world goes through AgentDeps: the clock, the task launcher
// (processes and signals) and the master client (the network). Only the task directories are
// real files. Tests drive an agent by hand on one thread, with Start() and then Step() for each
// round; production calls Run(), which does the same work on two threads until told to stop.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "agent/gpu_probe.h"
#include "agent/master_client.h"
#include "agent/task_launcher.h"
#include "agent/task_supervisor.h"
#include "common/time.h"
#include "model/agent_protocol.h"
#include "model/node.h"

namespace cohort::agent {

struct AgentConfig {
  std::string data_dir;  // task directories live in <data_dir>/tasks
  NodeInfo node;         // id, address, CPUs, memory, ports, labels; GPUs come from the probe
  Duration sync_wait = std::chrono::seconds(5);  // long poll; also the heartbeat period
  Duration poll_interval = std::chrono::milliseconds(50);
};

// What the agent acts through. Each must outlive the agent.
struct AgentDeps {
  const Clock& clock;
  TaskLauncher& launcher;
  MasterClient& master;
};

class Agent {
 public:
  Agent(AgentConfig config, GpuInventory gpus, AgentDeps deps);
  ~Agent();

  // Creates the task directories' root and adopts the tasks an earlier agent left in it (their
  // supervisors keep running; ended ones are reported with their exit). kInternal if the data
  // directory is unusable. Call once, before the rest.
  Status Start();

  // One round, as a test drives it: notices new pids, ended supervisors and overdue stops;
  // ships new output; then one exchange with the master that does not wait (registering if
  // the agent is not registered), and applies its answer. Returns that exchange's error, if any.
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
    std::optional<TaskExit> exit;
    int64_t shipped = 0;  // bytes of output.log the master holds
    bool reported_end = false;
  };

  // Reads the agent's instance name from its data directory, or makes one up for a new one.
  Status LoadInstance();
  void AdoptExistingTasks();
  void Launch(const TaskLaunch& launch);  // requires mu_
  void Apply(const DesiredState& desired);
  AgentReport BuildReport();
  // Notices new pids, ended supervisors and overdue stops; returns true if the master should
  // hear about it now.
  bool CheckTasks();
  // Ships new output of every task; returns true if a task became fully shipped after ending.
  bool ShipLogs();
  // One exchange with the master: Register if the agent is not registered, else Sync waiting up
  // to `wait`; applies the answer. kNotFound from Sync leaves the agent unregistered.
  Status SyncOnce(Duration wait);
  // The long-poll loop of Run's second thread.
  void SyncLoop(const std::atomic<bool>& stop);

  AgentConfig config_;
  const Clock& clock_;
  TaskLauncher& launcher_;
  MasterClient& master_;
  std::mutex mu_;  // guards tasks_, applied_version_ and every call of launcher_
  std::map<TaskId, LocalTask> tasks_;
  uint64_t applied_version_ = 0;
  std::atomic<bool> registered_{false};
};

}  // namespace cohort::agent
