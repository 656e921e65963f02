// The variables and files of each framework that needs more than PyTorch's or TensorFlow's few
// (docs/job-spec.md, "Frameworks"), for task_environment.cc. Pure: everything comes from the
// job's placed tasks.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/agent_protocol.h"
#include "model/job.h"

namespace cohort::framework {

// The name mpirun and the exec service know a worker task by ("cohort-job12-worker-0"): in the
// hostfile, and the first argument of the remote launch. Never a real host's, so that mpirun
// starts no rank outside a worker (it would start those of a host it takes for its own in the
// launcher itself), and two workers on one machine are two MPI nodes, each with its own GPUs.
// No dot: Open MPI cuts a name at its first.
std::string MpiNodeName(const Job& job, const Task& worker);

// Open MPI's hostfile: one line per worker task, "NAME slots=N", N its GPUs (or its whole
// CPUs when it has none, at least 1).
std::string MpiHostfile(const Job& job);
// "NAME=host:port,..." for every task that serves commands (exec_service), in rank order: where
// `cohort-exec NAME ...` connects.
std::string ExecEndpoints(const Job& job);
void AddMpi(const Job& job, const Task& self, std::map<std::string, std::string>& env);

// DeepSpeed's hostfile: "NAME slots=N" per task, N its GPUs (at least 1).
std::string DeepSpeedHostfile(const Job& job);
void AddDeepSpeed(const Job& job, const Task& self, std::map<std::string, std::string>& env);

void AddJax(const Job& job, const Task& self, std::map<std::string, std::string>& env);

// A Slurm job's node names, one per task in rank order (SLURM_JOB_NODELIST): the tasks' hosts,
// or their nodes' ids when two tasks share a host.
std::vector<std::string> SlurmNodeNames(const Job& job);
// "NAME=host:port,..." for every task of a Slurm job, by those names: where srun's tasks go.
std::string SlurmExecEndpoints(const Job& job);
// The batch script's SLURM_* variables (slurm/slurm_environment.h) on every node; on the first,
// what `cohort-exec batch` reads besides: COHORT_SLURM_OUTPUT, _ERROR, _INPUT, _OPEN_MODE and
// _SIGNAL.
void AddSlurm(const Job& job, const Task& self, std::map<std::string, std::string>& env);
std::string SlurmScript(const Job& job);
// `cohort-exec batch -- ARGS`: the first node's command.
std::vector<std::string> SlurmBatchCommand(const Job& job);

// A notebook session's Jupyter (docs/runtimes.md, "Notebooks"): Debian's jupyter-notebook on
// the task's port, under the path the master proxies (NotebookBasePath), its token the job's
// credential ($JUPYTER_TOKEN, which the master sends with every request it forwards).
std::vector<std::string> NotebookCommand(const Job& job, const Task& self);
// "/api/v1/jobs/12/notebook/": where the master serves job 12's notebook.
std::string NotebookBasePath(JobId job);

// The tasks not being taken away, in rank order, and the first of them.
std::vector<const Task*> ActiveTasks(const Job& job);

}  // namespace cohort::framework
