#include "master/usage_reader.h"

#include <fmt/format.h>

namespace cohort::master {

StatusOr<UsageReport> ComputeUsage(state::StateStore& store, const UsageQuery& query,
                                   Timestamp now) {
  COHORT_ASSIGN_OR_RETURN(UsageAccumulator sums, UsageAccumulator::Create(query, now));
  state::UsageScan scan{query.since, query.until, query.team, query.user};
  COHORT_RETURN_IF_ERROR(
      store.ScanUsage(scan, [&](const state::TaskUsage& hold) { sums.AddHold(hold); }));
  COHORT_RETURN_IF_ERROR(store.ScanMilestones(
      scan, [&](const state::JobMilestone& milestone) { sums.AddMilestone(milestone); }));
  return std::move(sums).Finish();
}

UsageReader::UsageReader(std::unique_ptr<state::StateStore> store, Post post)
    : store_(std::move(store)), post_(std::move(post)), thread_([this] { Run(); }) {}

UsageReader::~UsageReader() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  thread_.join();
}

void UsageReader::Submit(UsageQuery query, Timestamp now, Done done) {
  {
    std::lock_guard lock(mu_);
    if (busy_ < kMaxUsageReports) {
      ++busy_;
      queue_.push_back(Request{std::move(query), now, std::move(done)});
      cv_.notify_one();
      return;
    }
  }
  done(Status::Unavailable(
      fmt::format("{} usage reports are being computed already; try again in a few seconds",
                  kMaxUsageReports)));
}

void UsageReader::Run() {
  while (true) {
    Request next;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    auto report = ComputeUsage(*store_, next.query, next.now);
    {
      std::lock_guard lock(mu_);
      --busy_;
    }
    post_([done = std::move(next.done), report = std::move(report)]() mutable {
      done(std::move(report));
    });
  }
}

}  // namespace cohort::master
