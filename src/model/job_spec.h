// A job as its submitter describes it (docs/job-spec.md). Parsed and validated by src/spec;
// this file only holds the values.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/enum_names.h"
#include "common/time.h"
#include "model/dataset.h"
#include "model/job_array.h"
#include "model/job_dependency.h"
#include "model/resources.h"
#include "model/session_spec.h"
#include "model/slurm_section.h"

namespace cohort {

// The rendezvous environment injected into every task (src/framework).
// What the tasks are told of each other (docs/job-spec.md, "Frameworks"): framework/ gives each
// its variables and files.
enum class Framework { kNone, kPyTorch, kTensorFlow, kMpi, kJax, kDeepSpeed, kSlurm };
inline constexpr auto kFrameworkNames = std::to_array<EnumName<Framework>>({
    {Framework::kNone, "none"},
    {Framework::kPyTorch, "pytorch"},
    {Framework::kTensorFlow, "tensorflow"},
    {Framework::kMpi, "mpi"},
    {Framework::kJax, "jax"},
    {Framework::kDeepSpeed, "deepspeed"},
    {Framework::kSlurm, "slurm"},
});
const char* FrameworkName(Framework f);
std::optional<Framework> ParseFramework(std::string_view name);

// Named priorities; any integer in [kMinPriority, kMaxPriority] is allowed too.
inline constexpr int kPriorityLow = -100;
inline constexpr int kPriorityNormal = 0;
inline constexpr int kPriorityHigh = 100;
inline constexpr int kMinPriority = -1000;
inline constexpr int kMaxPriority = 1000;
inline constexpr auto kPriorityNames = std::to_array<EnumName<int>>({
    {kPriorityLow, "low"},
    {kPriorityNormal, "normal"},
    {kPriorityHigh, "high"},
});
// "low", "normal", "high" for the named values, the number otherwise.
std::string PriorityName(int priority);
// The value of a named priority ("low", "normal", "high").
std::optional<int> ParsePriorityName(std::string_view name);

inline constexpr Duration kDefaultGracePeriod = std::chrono::seconds(30);

// One role of a job (`worker`, `chief`, `ps`, ...): `replicas` identical tasks.
// A role names a task group: 1 to kMaxRoleLength lowercase letters, digits, '_' or '-', starting
// with a letter. It is part of task ids, directory and file names, so nothing else is allowed.
inline constexpr size_t kMaxRoleLength = 32;
bool IsValidRole(std::string_view role);

struct TaskGroupSpec {
  std::string role;
  int replicas = 1;      // the number of tasks; for an elastic group, the minimum
  int max_replicas = 0;  // elastic: grows up to this many when GPUs are idle; 0: fixed size
  Resources resources;   // per replica
  // Empty only for an MPI job's workers, which then only serve the launcher's mpirun.
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  // Variables whose value is a secret of the job's user or team, by the secret's name
  // (model/secret.h): the spec keeps the reference, never the value, which the master puts
  // into the task's environment when it builds the task's launch. No name is in both maps.
  std::map<std::string, std::string> env_secrets;
  std::string workdir;  // empty: the task's own scratch directory on the agent
  // No two replicas of this group on one node (Slurm's --nodes: one task per machine); replicas
  // of the job's other groups may share nodes with them. The rule is MayShareNode (plan.h).
  bool distinct_nodes = false;
  // The container image its tasks run in (model/image_reference.h, docs/runtimes.md), as the
  // master qualified it with the cluster's registry; empty: a bare process on the node.
  std::string image = {};

  bool elastic() const { return max_replicas > replicas; }
};

// Why an attempt ended early, as restart.on names it.
enum class RestartCause { kFailure, kNodeLost, kPreempted };
inline constexpr auto kRestartCauseNames = std::to_array<EnumName<RestartCause>>({
    {RestartCause::kFailure, "failure"},
    {RestartCause::kNodeLost, "node_lost"},
    {RestartCause::kPreempted, "preempted"},
});
const char* RestartCauseName(RestartCause c);
std::optional<RestartCause> ParseRestartCause(std::string_view name);

inline constexpr int kDefaultMaxAttempts = 3;
inline constexpr Duration kDefaultBackoff = std::chrono::seconds(10);
inline constexpr Duration kDefaultMaxBackoff = std::chrono::minutes(5);

// What an attempt that ended early (a task failed, a node was lost) does to its job.
struct EarlyEnd {
  bool restartable = false;         // restart.on includes the cause
  bool requeue = false;             // false: the job ends FAILED
  int failures = 0;                 // the job's failed attempts, this one included if it counts
  std::optional<Duration> backoff;  // the wait before the next attempt
};

// When an attempt that ended early is followed by another (docs/job-spec.md, "restart").
struct RestartPolicy {
  // Attempts that may end in a failure or a node loss, the last included: the restart budget.
  // Preemption is the scheduler's choice, not the job's fault, and never spends it.
  int max_attempts = kDefaultMaxAttempts;
  // The causes that requeue the job; any other ends it FAILED.
  std::vector<RestartCause> on = {RestartCause::kFailure, RestartCause::kNodeLost,
                                  RestartCause::kPreempted};
  // After a failure the next attempt waits `backoff`, doubling with each failure up to
  // `max_backoff`, so that a job that crashes at once does not hog the scheduler. A node loss
  // or a preemption is not the job's doing: its next attempt may start at once.
  Duration backoff = kDefaultBackoff;
  Duration max_backoff = kDefaultMaxBackoff;
  // Fenced: an agent cut off from the master for longer than the node timeout stops this job's
  // tasks itself, so that an old attempt and its replacement overlap by at most the grace
  // period; the price is that a master down that long stops the job (docs/reliability.md).
  bool fence = false;

  bool RestartsOn(RestartCause cause) const;
  // The wait before the next attempt after `failures` failed attempts (at least 1).
  Duration BackoffAfter(int failures) const;
  // The one rule for an attempt that ended early, of a job with `failures` failed attempts
  // before it: the master applies it to real jobs, the simulator to simulated node failures.
  EarlyEnd EndEarly(RestartCause cause, int failures) const;
  bool operator==(const RestartPolicy&) const = default;
};

// Where a job may run: every node that runs one of its tasks must have GPUs of this model (if
// set) and carry every one of these labels.
struct Constraints {
  std::string gpu_model;
  std::map<std::string, std::string> labels;
  // Nodes it may not run on for now. Never from a spec: the master sets it for a waiting job
  // from Job::excluded_nodes (docs/reliability.md: a node whose GPUs it left idle, or where a
  // task of it could not start).
  std::set<std::string> excluded_nodes;
  // Nodes whose dataset cache already holds every dataset the job reads: placement prefers
  // them to others that fit as well, and is never restricted to them. Never from a spec: the
  // master sets it for a waiting job (docs/data.md, "Placement and the pull").
  std::set<std::string> preferred_nodes;
  // No node is ruled out (preferred_nodes rules out none).
  bool empty() const { return gpu_model.empty() && labels.empty() && excluded_nodes.empty(); }
  // Whether the node `node_id`, with GPUs of `node_gpu_model` and these labels, may run the job's
  // tasks: the one rule the scheduler and the master apply.
  bool Admits(const std::string& node_id, const std::string& node_gpu_model,
              const std::map<std::string, std::string>& node_labels) const;
  bool operator==(const Constraints&) const = default;
};

struct JobSpec {
  std::string name;
  std::string team = "default";
  int priority = kPriorityNormal;
  Framework framework = Framework::kNone;
  std::vector<TaskGroupSpec> tasks;
  RestartPolicy restart;
  std::optional<Duration> max_runtime;          // wall time of one attempt
  Duration grace_period = kDefaultGracePeriod;  // SIGTERM to SIGKILL
  Constraints constraints;
  // Datasets every task sees read-only at $COHORT_DATA_DIR/NAME (docs/data.md, "Datasets"), as
  // the spec names them; the master pins each to its team and version when the job is
  // submitted, so that every attempt reads the same.
  std::vector<DatasetRef> datasets = {};
  // The job's code (docs/data.md, "Code"): the SHA-256 of a context manifest in the store, which
  // the CLI uploads; every task whose group names no workdir starts in an unpacked copy of it.
  // Empty: none.
  std::string context = {};
  // Run once per index, as one array of jobs (docs/job-spec.md, "Arrays"); none: one job.
  std::optional<ArraySpec> array = {};
  // Jobs that must end the way each says before this one may start ("Dependencies").
  std::vector<Dependency> depends_on = {};
  // A Slurm batch job's script and settings (framework slurm, docs/slurm.md); none otherwise.
  std::optional<SlurmSection> slurm = {};
  // An interactive session (`cohort shell`, docs/runtimes.md): its one task runs what Cohort
  // starts for the kind, not a command of its own; none: a job that runs its commands.
  std::optional<SessionSpec> session = {};

  // At the start (the minimum of elastic groups).
  int TotalReplicas() const;
  // Whether a task group names an image.
  bool UsesImages() const;
  Resources TotalResources() const;
  bool elastic() const;
};

// Where the job's tasks may run: its spec's constraints, and for a job whose tasks run in images,
// only the nodes whose agent runs containers (kRuntimeLabel). The one rule for the scheduler,
// the master and `cohort why`.
Constraints PlacementConstraints(const JobSpec& spec);

}  // namespace cohort
