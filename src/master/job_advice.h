// The advisor at work on the master (docs/observability.md, "Advice"): each running job's newest
// samples (master/resource_history.h) go to its JobAdvisor from the tick; a finding becomes an
// event when it begins to hold, and idle GPUs are reclaimed if the admin said so.
#pragma once

#include <map>
#include <set>
#include <vector>

#include "common/time.h"
#include "master/advisor.h"
#include "master/job_book.h"
#include "master/job_lifecycle.h"
#include "master/master_config.h"
#include "master/resource_history.h"

namespace cohort::master {

class JobAdvice {
 public:
  JobAdvice(const MasterConfig& config, JobBook& jobs, const ResourceHistory& resources,
            JobLifecycle& lifecycle, const Clock& clock);

  // Feeds each running job's newest samples to its advisor.
  void Tick(Timestamp now);
  // What the advisor finds of a running job now (empty for others, or without samples).
  std::vector<Advice> For(JobId id) const;

 private:
  struct State {
    int attempt = 0;
    JobAdvisor advisor;
    Timestamp last_sample{};
    std::set<AdviceKind> told;  // findings already recorded as events, while they hold
  };

  const MasterConfig& config_;
  JobBook& jobs_;
  const ResourceHistory& resources_;
  JobLifecycle& lifecycle_;
  const Clock& clock_;
  std::map<JobId, State> advice_;  // the advisor's view of each running job
};

}  // namespace cohort::master
