// The node agent: registers its machine with the master, then keeps what runs here equal to
// what the master wants (docs/architecture.md, "Reconciliation"). It starts each task under its
// own supervisor process (task_supervisor.h), ships task output to the master, and reports exits.
//
// Tasks outlive the agent: stopping or restarting the agent leaves them running, and a new agent
// on the same data directory adopts them.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "agent/gpu_probe.h"
#include "agent/task_supervisor.h"
#include "client/cohort_client.h"
#include "model/node.h"

namespace cohort::agent {

struct AgentConfig {
  std::string master_url = client::kDefaultMasterUrl;
  std::string data_dir;  // task directories live in <data_dir>/tasks
  std::string cohortd;   // the cohortd binary, for `cohortd run-task`
  NodeInfo node;         // id, address, CPUs, memory, ports, labels; GPUs come from the probe
  Duration sync_wait = std::chrono::seconds(5);  // long poll; also the heartbeat period
  Duration poll_interval = std::chrono::milliseconds(50);
};

class Agent {
 public:
  Agent(AgentConfig config, GpuInventory gpus);
  ~Agent();

  // Registers and reconciles until `stop` becomes true. Returns an error only if the agent
  // cannot work at all (its data directory is unusable); an unreachable master is waited for.
  Status Run(const std::atomic<bool>& stop);

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

  Status Prepare();
  void AdoptExistingTasks();
  void Launch(const TaskLaunch& launch);
  void Apply(const DesiredState& desired);
  AgentReport BuildReport();
  // Notices new pids, ended supervisors and overdue stops; returns true if the master should
  // hear about it now.
  bool CheckTasks();
  // Ships new output of every task; returns true if a task became fully shipped after ending.
  bool ShipLogs(client::CohortClient& client);
  Status RegisterUntilDone(client::CohortClient& client, const std::atomic<bool>& stop);
  void SyncLoop(const std::atomic<bool>& stop);

  AgentConfig config_;
  std::mutex mu_;
  std::map<TaskId, LocalTask> tasks_;
  uint64_t applied_version_ = 0;
  std::atomic<bool> registered_{false};
};

}  // namespace cohort::agent
