// MPI without sshd (docs/job-spec.md, "MPI"): the launcher's mpirun reaches each worker through
// `cohort-exec`, the exec service every worker runs on its port, with the job's credential.
#include <fmt/format.h>

#include <algorithm>

#include "common/strings.h"
#include "framework/frameworks.h"

namespace cohort::framework {
namespace {

int Slots(const Task& t) {
  if (!t.gpus.empty()) return static_cast<int>(t.gpus.size());
  return std::max<int>(1, static_cast<int>(t.resources.milli_cpus / 1000));
}

bool IsWorker(const Task& t) { return t.role == "worker"; }

}  // namespace

std::string MpiNodeName(const Job& job, const Task& worker) {
  return fmt::format("cohort-job{}-{}-{}", job.id, worker.role, worker.index);
}

std::string MpiHostfile(const Job& job) {
  std::string out;
  for (const Task* t : ActiveTasks(job)) {
    if (IsWorker(*t)) out += fmt::format("{} slots={}\n", MpiNodeName(job, *t), Slots(*t));
  }
  return out;
}

std::string ExecEndpoints(const Job& job) {
  std::vector<std::string> endpoints;
  for (const Task* t : ActiveTasks(job)) {
    if (job.spec.framework == Framework::kMpi && IsWorker(*t)) {
      endpoints.push_back(fmt::format("{}={}:{}", MpiNodeName(job, *t), t->host, t->port));
    }
  }
  return Join(endpoints, ",");
}

void AddMpi(const Job& job, const Task& self, std::map<std::string, std::string>& env) {
  int slots = 0;
  for (const Task* t : ActiveTasks(job)) {
    if (IsWorker(*t)) slots += Slots(*t);
  }
  env["COHORT_MPI_SLOTS"] = std::to_string(slots);
  env["COHORT_EXEC_ENDPOINTS"] = ExecEndpoints(job);
  if (self.role != "launcher") return;
  // mpirun's remote launch: `cohort-exec NAME orted ...`, from the task tools on the PATH.
  env["OMPI_MCA_plm_rsh_agent"] = "cohort-exec";
  // Every daemon from the launcher (none from another worker): one hop, one credential check.
  env["OMPI_MCA_plm_rsh_no_tree_spawn"] = "1";
  // Each worker's daemon stays in its exec session: when it dies, mpirun hears at once, and
  // when mpirun goes, the session ends and the service ends the daemon and its ranks.
  env["OMPI_MCA_orte_leave_session_attached"] = "1";
}

}  // namespace cohort::framework
