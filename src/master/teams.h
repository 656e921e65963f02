// Teams and their quotas, as admins set them (docs/scheduler.md, "Quotas"): written before memory
// changes, so a refused write changes nothing, and handed to the cluster core at once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "master/job_book.h"
#include "master/master_config.h"
#include "master/scheduling_loop.h"
#include "master/secrets.h"
#include "model/job.h"
#include "state/state_store.h"

namespace cohort::master {

struct TeamStatus {
  TeamQuota quota;
  bool implicit = false;  // the default team, never created by an admin
  Resources held;         // by its starting, running and stopping jobs
  int running_jobs = 0;   // starting, running and stopping
  int pending_jobs = 0;

  // GPUs held beyond the guarantee: what preemption may take back (docs/scheduler.md).
  int64_t BorrowedGpus() const { return std::max<int64_t>(0, held.gpus - quota.guaranteed_gpus); }
};

class Teams {
 public:
  Teams(state::StateStore& store, const JobBook& jobs, Secrets& secrets, SchedulingLoop& loop);

  // Reads the teams from the store and hands them to the cluster core.
  Status Load();
  // Creates or changes a team. kInvalidArgument for a bad name or quota.
  StatusOr<TeamQuota> Set(TeamQuota team);
  // kNotFound; kFailedPrecondition while the team has pending or active jobs. Its secrets go
  // with it.
  Status Delete(const std::string& name);
  // Every team with what its jobs hold and wait for, the default team included, by name.
  std::vector<TeamStatus> List() const;
  // Whether jobs may name `team`: the default team, or one an admin created.
  bool Exists(std::string_view team) const;

 private:
  state::StateStore& store_;
  const JobBook& jobs_;
  Secrets& secrets_;
  SchedulingLoop& loop_;
  std::vector<TeamQuota> teams_;  // by name
};

}  // namespace cohort::master
