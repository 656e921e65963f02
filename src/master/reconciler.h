// The reconciler: the master's side of the protocol with agents (docs/architecture.md). Agents
// register and sync; each report is applied to the jobs (tasks running, ended, lost; checkpoints;
// resource samples), and the answer is the node's desired state. It also owns what makes a node
// live or not: silence past the node timeout (LOST, with its tasks), and an admin's drain,
// undrain and removal. The home of what later issues add to the agent protocol (sessions'
// ports, artifacts shipped by tasks).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "master/accounts.h"
#include "master/artifacts.h"
#include "master/job_book.h"
#include "master/job_lifecycle.h"
#include "master/journal.h"
#include "master/master_config.h"
#include "master/node_registry.h"
#include "master/resource_history.h"
#include "master/scheduling_loop.h"
#include "master/task_secrets.h"
#include "model/agent_protocol.h"
#include "model/node.h"

namespace cohort::master {

// Who holds one GPU.
struct GpuHolder {
  JobId job_id = 0;
  std::string task;  // "worker/1"
};

struct NodeStatus {
  const Node* node = nullptr;
  uint64_t version = 0;
  Resources allocated;
  std::map<int, GpuHolder> gpu_holders;  // by GPU index; a free GPU is absent
};

class Reconciler {
 public:
  Reconciler(const MasterConfig& config, JobBook& jobs, NodeRegistry& nodes,
             SchedulingLoop& scheduling, JobLifecycle& lifecycle, Journal& journal,
             Accounts& accounts, TaskSecrets& secrets, Artifacts& artifacts, const Clock& clock);

  // Reads the nodes from the store; every one gets a whole node timeout from now to be heard
  // from. Desired-state versions from now on are above `versions_above`.
  Status Load(uint64_t versions_above);

  // Adds or refreshes a node; returns what it should run.
  StatusOr<DesiredState> Register(NodeInfo info);
  // Applies an agent's report and returns what it should run. kNotFound if the node never
  // registered (the agent registers again).
  // While the master is read-only (Journal::read_only), the node is only heard: its report is
  // applied once the master writes again.
  StatusOr<DesiredState> Sync(const std::string& node_id, const AgentReport& report);
  // kNotFound for an unknown node. Not const: a secret a task names that is gone since its
  // submission is left out of its environment, and its job gets an event saying so.
  StatusOr<DesiredState> DesiredFor(const std::string& node_id);
  // The version of the node's desired state, without building it; none for an unknown node.
  std::optional<uint64_t> VersionOf(const std::string& node_id) const;
  std::vector<NodeStatus> List() const;
  // The last few minutes of what agents measured of their GPUs and tasks (utilisation, memory,
  // CPU), taken from their sync reports; in memory only.
  const ResourceHistory& resources() const { return resources_; }

  // Nothing new is placed on a drained node; what runs there keeps running. kNotFound.
  StatusOr<const Node*> Drain(const std::string& node_id, std::string reason);
  StatusOr<const Node*> Undrain(const std::string& node_id);
  // Forgets a node. Its tasks are LOST and their gangs requeued; if its agent still runs, it
  // registers again as a new node. kNotFound.
  Status Remove(const std::string& node_id);
  // Nodes silent for longer than the node timeout, on the monotonic clock, become LOST with
  // their tasks.
  void CheckTimeouts();
  // The master itself did not run for `how_long` (the process was paused, its loop stalled):
  // what it did not hear in that time is not the nodes' silence, so every node gets a whole node
  // timeout from now before any is judged.
  void WasNotListening(Duration how_long);

 private:
  // Sync while the master is read-only.
  StatusOr<DesiredState> HeardWhileReadOnly(const std::string& node_id, const AgentReport& report);
  // The report's GPU samples of the GPUs the node registered.
  static std::vector<GpuSamples> RegisteredGpuSamples(const NodeRegistry::Entry& entry,
                                                      const AgentReport& report);
  // Task ends found together (one agent report, one lost node), applied to their jobs at once.
  struct TaskEnds {
    std::map<JobId, std::vector<JobEvent>> events;
    std::set<JobId> changed;
    std::vector<std::pair<JobId, Task>> released;
  };
  // `lost_why` says why a LOST report's task is gone ("node b missed its heartbeats for 10s").
  void RecordTaskReport(TaskEnds& ends, Job& job, Task& task, const TaskReport& report,
                        const std::string& lost_why = {});
  void ApplyTaskReport(Job& job, Task& task, const TaskReport& report, const std::string& lost_why,
                       std::vector<JobEvent>& events);
  // Moves started gangs to RUNNING and stopped ones on, writes each changed job, and offers
  // what was released to waiting jobs.
  Status Conclude(TaskEnds& ends);
  // Every live task on the node is LOST (the machine died, was wiped, or was removed).
  Status LoseTasksOn(const std::string& node_id, const std::string& why);
  // A checkpoint that a task of the job's current attempt reported at `at` (its agent's clock):
  // kept if newer than the job's last, and handed to the cluster core (master/checkpoints.cc).
  // True if the job changed and must be written.
  bool NoteCheckpoint(Job& job, Timestamp at);
  // A task's image pull as its agent reported it (docs/runtimes.md, "Pulling"): the job's
  // message while it starts, and two events per task, when the pull is first heard of and when
  // it is done. True if the job changed and must be written.
  bool NoteImagePull(Job& job, const Task& task, const std::string& node_id, const ImagePull& pull,
                     std::vector<JobEvent>& events);
  void SetNodeState(NodeRegistry::Entry& entry, NodeState state);
  // Writes the node's record as `change` leaves it, then keeps it (nothing changes if the store
  // refuses), and tells the cluster core whether it is schedulable. kNotFound for an unknown id.
  StatusOr<NodeRegistry::Entry*> ChangeNode(const std::string& node_id,
                                            const std::function<void(Node&)>& change);

  const MasterConfig& config_;
  JobBook& jobs_;
  NodeRegistry& nodes_;
  SchedulingLoop& scheduling_;
  JobLifecycle& lifecycle_;
  Journal& journal_;
  Accounts& accounts_;
  TaskSecrets& secrets_;
  Artifacts& artifacts_;
  const Clock& clock_;
  ResourceHistory resources_;
  // When each active job's last checkpoint was last taken (its attempt, the master's clock): the
  // bound on how often an agent's reports make the master write a job (NoteCheckpoint).
  std::map<JobId, std::pair<int, Timestamp>> checkpoint_taken_at_;
  // The pulls of active jobs' tasks already announced: whether their end was, and when the job's
  // message last showed their progress (at most every kPullMessageEvery, so that a long pull
  // does not make the master write its job at every report). Entries of jobs no longer active
  // go at the next sync.
  struct PullSeen {
    bool ended = false;
    Timestamp messaged{};
  };
  static constexpr Duration kPullMessageEvery = std::chrono::seconds(5);
  std::map<TaskId, PullSeen> pulls_announced_;
};

}  // namespace cohort::master
