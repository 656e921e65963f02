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
    : store_(std::move(store)), post_(std::move(post)) {}

UsageReader::~UsageReader() { thread_.Stop(); }

void UsageReader::Submit(UsageQuery query, Timestamp now, Done done) {
  bool taken = false;
  {
    std::lock_guard lock(mu_);
    taken = busy_ < kMaxUsageReports;
    if (taken) ++busy_;
  }
  if (!taken) {
    return done(Status::Unavailable(
        fmt::format("{} usage reports are being computed already; try again in a few seconds",
                    kMaxUsageReports)));
  }
  thread_.Post([this, request = Request{std::move(query), now, std::move(done)}]() mutable {
    Compute(request);
  });
}

void UsageReader::Compute(Request& request) {
  auto report = ComputeUsage(*store_, request.query, request.now);
  {
    std::lock_guard lock(mu_);
    --busy_;
  }
  post_([done = std::move(request.done), report = std::move(report)]() mutable {
    done(std::move(report));
  });
}

}  // namespace cohort::master
