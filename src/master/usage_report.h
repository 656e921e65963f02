// Accounting (cohort usage): GPU and CPU time, jobs and queueing delay per team, user and period,
// summed from the store's task holds and job milestones (state/usage.h). Pure: no store, no
// clock; `now` ends the holds that are still open.
//
// A hold counts where it overlaps [since, until), split exactly at period boundaries (UTC days,
// or weeks from Monday 00:00 UTC): a task that runs across midnight counts in both days. A
// milestone counts in the period it falls in: a submission, an attempt's start (the first
// attempt's also gives the job's queueing delay, submission to first start), a job's end.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "common/enum_names.h"
#include "common/status.h"
#include "common/time.h"
#include "state/usage.h"

namespace cohort::master {

enum class UsagePeriod { kTotal, kDay, kWeek };
inline constexpr auto kUsagePeriodNames = std::to_array<EnumName<UsagePeriod>>({
    {UsagePeriod::kTotal, "total"},
    {UsagePeriod::kDay, "day"},
    {UsagePeriod::kWeek, "week"},
});

// What one report may cost: a year of days, 19 years of weeks; and the rows it may hold (its
// groups), whatever the store holds.
inline constexpr int64_t kMaxUsagePeriods = 1000;
inline constexpr size_t kMaxUsageRows = 10'000;

struct UsageQuery {
  Timestamp since;
  Timestamp until;
  std::string team;  // empty: every team
  std::string user;  // empty: every user
  UsagePeriod by = UsagePeriod::kTotal;
};

struct UsageRow {
  // The period's part within [since, until); the whole range in a report by total.
  Timestamp start;
  Timestamp end;
  std::string team;  // empty in the report's total
  std::string user;
  double gpu_hours = 0;
  double cpu_hours = 0;
  int64_t jobs_submitted = 0;
  int64_t jobs_succeeded = 0;
  int64_t jobs_failed = 0;
  int64_t jobs_killed = 0;
  int64_t attempts = 0;      // started in the period
  int64_t jobs_started = 0;  // first attempts started: how many queueing delays were summed
  Duration queue_delay_total{0};
  Duration queue_delay_max{0};
};

struct UsageReport {
  UsageQuery query;
  Timestamp now;
  std::vector<UsageRow> rows;  // by period, then team, then user; only groups with something
  UsageRow total;
};

// The start of the UTC day or week (from Monday) that holds `t`; for kTotal, `t` itself.
Timestamp PeriodStart(UsagePeriod by, Timestamp t);

class UsageAccumulator {
 public:
  // kInvalidArgument, naming the field, for an empty range or more than kMaxUsagePeriods.
  static StatusOr<UsageAccumulator> Create(UsageQuery query, Timestamp now);

  void AddHold(const state::TaskUsage& hold);
  void AddMilestone(const state::JobMilestone& milestone);
  // kInvalidArgument if the report would have more than kMaxUsageRows rows.
  StatusOr<UsageReport> Finish() &&;

 private:
  struct Sums {
    double gpu_us = 0;
    double cpu_us = 0;  // CPU-microseconds
    int64_t submitted = 0, succeeded = 0, failed = 0, killed = 0, attempts = 0, started = 0;
    Duration delay_total{0}, delay_max{0};
  };
  using Key = std::tuple<int64_t, std::string, std::string>;  // period start, team, user

  UsageAccumulator(UsageQuery query, Timestamp now) : query_(std::move(query)), now_(now) {}
  // The sums of the group, or null once the report has too many rows (nothing more is kept).
  Sums* Group(Timestamp at, const std::string& team, const std::string& user);
  Timestamp PeriodEnd(Timestamp start) const;

  UsageQuery query_;
  Timestamp now_;
  std::map<Key, Sums> groups_;
  bool too_many_ = false;
};

}  // namespace cohort::master
