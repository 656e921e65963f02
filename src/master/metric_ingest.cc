#include "master/metric_ingest.h"

#include <fmt/format.h>

namespace cohort::master {

MetricIngest::~MetricIngest() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (writer_.joinable()) writer_.join();
}

void MetricIngest::StartWriter(Post post) {
  post_ = std::move(post);
  writer_ = std::thread([this] { Run(); });
}

void MetricIngest::AppendAsync(JobId job, std::string task, std::vector<state::TaggedPoint> points,
                               Done done) {
  if (!writer_.joinable()) return done(store_->Append(job, task, points));
  {
    std::lock_guard lock(mu_);
    if (queued_points_ + points.size() > kMaxQueuedPoints) {
      return done(Status::Unavailable(fmt::format(
          "{} metric points are waiting to be written; send these again later", queued_points_)));
    }
    queued_points_ += points.size();
    queue_.push_back(Batch{job, std::move(task), std::move(points), std::move(done)});
  }
  wake_.notify_one();
}

void MetricIngest::Run() {
  for (;;) {
    Batch batch;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, with everything written
      batch = std::move(queue_.front());
      queue_.pop_front();
    }
    auto result = store_->Append(batch.job, batch.task, batch.points);
    {
      std::lock_guard lock(mu_);
      queued_points_ -= batch.points.size();
    }
    post_([done = std::move(batch.done), result = std::move(result)]() mutable {
      done(std::move(result));
    });
  }
}

}  // namespace cohort::master
