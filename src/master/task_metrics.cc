#include <fmt/format.h>

#include "master/master.h"

namespace cohort::master {

void Master::AppendMetrics(const std::string& node_id, const TaskId& task,
                           std::vector<state::TaggedPoint> points, MetricIngest::Done done) {
  if (Status s = jobs_.CheckTask(task, node_id); !s.ok()) return done(s);
  // The searcher hears a trial's points as they arrive; storing them goes on regardless.
  if (const Job* job = jobs_.Find(task.job); job && job->trial) {
    if (!journal_.read_only()) sweeps_.Observe(*job, task, points);
  }
  // A series is per task, across attempts: a restarted task's curve goes on where it was.
  metrics_->AppendAsync(task.job, fmt::format("{}/{}", task.role, task.index), std::move(points),
                        std::move(done));
}

}  // namespace cohort::master
