#include "agent/task_metrics.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace cohort::agent {
namespace {

constexpr size_t kMaxProblemsKept = 100;
constexpr int kMaxSkipPolls = 1000;  // 8 GiB of existing event files at the reader's budget

// A point of run "train", tag "loss" is the series "train/loss": TensorBoard's run and tag.
std::string SeriesTag(const metrics::MetricPoint& p) {
  return p.run.empty() ? p.tag : p.run + "/" + p.tag;
}

}  // namespace

TaskMetrics::TaskMetrics(std::string output, std::string event_dir, int64_t output_from,
                         bool skip_existing_events)
    : output_(std::move(output)), output_read_(output_from), output_saved_(output_from) {
  if (event_dir.empty()) return;
  events_.emplace(event_dir);
  if (!skip_existing_events) return;
  for (int i = 0; i < kMaxSkipPolls && events_->Poll().more; ++i) {
  }
}

void TaskMetrics::Collect(double now, bool ended) {
  int fd = ::open(output_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    std::string buf(1 << 16, '\0');
    int64_t budget = kMetricReadPerRound;
    while (budget > 0) {
      ssize_t got = ::pread(fd, buf.data(), buf.size(), output_read_);
      if (got <= 0) break;
      output_read_ += got;
      budget -= got;
      Add(lines_.Feed(std::string_view(buf.data(), static_cast<size_t>(got)), now));
    }
    ::close(fd);
  }
  if (events_ && (ended || now >= next_event_poll_)) {
    auto polled = events_->Poll();
    Add(polled.batch);
    next_event_poll_ = polled.more ? now : now + kEventPollSeconds;
  }
}

void TaskMetrics::Add(const metrics::MetricBatch& batch) {
  for (const auto& p : batch.points) {
    if (!std::isfinite(p.value) || !std::isfinite(p.wall_time)) {
      ++dropped_;
      continue;
    }
    backlog_.push_back(TaggedPoint{SeriesTag(p), MetricPoint{p.step, p.wall_time, p.value}});
  }
  while (backlog_.size() > kMaxMetricBacklog) {
    backlog_.pop_front();
    ++dropped_;
  }
  for (const auto& mark : batch.checkpoints) {
    checkpoint_read_at_ = std::max(checkpoint_read_at_.value_or(mark.read_time), mark.read_time);
    if (mark.step) checkpoint_step_ = mark.step;
  }
  for (const auto& problem : batch.problems) {
    if (problems_.size() < kMaxProblemsKept) problems_.push_back(problem);
  }
}

std::vector<TaggedPoint> TaskMetrics::Next(size_t n) const {
  n = std::min(n, backlog_.size());
  return std::vector<TaggedPoint>(backlog_.begin(), backlog_.begin() + static_cast<ptrdiff_t>(n));
}

void TaskMetrics::Shipped(size_t n) {
  n = std::min(n, backlog_.size());
  backlog_.erase(backlog_.begin(), backlog_.begin() + static_cast<ptrdiff_t>(n));
}

std::vector<metrics::ReadProblem> TaskMetrics::TakeProblems() {
  return std::exchange(problems_, {});
}

}  // namespace cohort::agent
