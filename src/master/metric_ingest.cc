#include "master/metric_ingest.h"

#include <fmt/format.h>

namespace cohort::master {

MetricIngest::~MetricIngest() { writer_.reset(); }

void MetricIngest::StartWriter(Post post) {
  post_ = std::move(post);
  writer_ = std::make_unique<WorkerThread>(WorkerThread::AtStop::kRunQueued);
}

void MetricIngest::AppendAsync(JobId job, std::string task, std::vector<state::TaggedPoint> points,
                               Done done) {
  if (!writer_) return done(store_->Append(job, task, points));
  {
    std::lock_guard lock(mu_);
    if (queued_points_ + points.size() > kMaxQueuedPoints) {
      return done(Status::Unavailable(fmt::format(
          "{} metric points are waiting to be written; send these again later", queued_points_)));
    }
    queued_points_ += points.size();
  }
  writer_->Post([this, job, task = std::move(task), points = std::move(points),
                 done = std::move(done)]() mutable { Write(job, task, points, done); });
}

void MetricIngest::Write(JobId job, const std::string& task,
                         const std::vector<state::TaggedPoint>& points, Done& done) {
  auto result = store_->Append(job, task, points);
  {
    std::lock_guard lock(mu_);
    queued_points_ -= points.size();
  }
  post_(
      [done = std::move(done), result = std::move(result)]() mutable { done(std::move(result)); });
}

}  // namespace cohort::master
