#include "master/usage_report.h"

#include <fmt/format.h>

#include <algorithm>

namespace cohort::master {
namespace {

constexpr int64_t kDayUs = 86'400'000'000;
constexpr int64_t kWeekUs = 7 * kDayUs;
// 1970-01-01 was a Thursday: weeks start 4 days after the epoch.
constexpr int64_t kFirstMondayUs = 4 * kDayUs;
constexpr double kHourUs = 3'600'000'000.0;

int64_t FloorTo(int64_t us, int64_t step, int64_t origin) {
  int64_t d = us - origin;
  int64_t q = d / step;
  if (d % step != 0 && d < 0) --q;
  return origin + q * step;
}

}  // namespace

Timestamp PeriodStart(UsagePeriod by, Timestamp t) {
  switch (by) {
    case UsagePeriod::kDay:
      return FromMicros(FloorTo(ToMicros(t), kDayUs, 0));
    case UsagePeriod::kWeek:
      return FromMicros(FloorTo(ToMicros(t), kWeekUs, kFirstMondayUs));
    case UsagePeriod::kTotal:
      break;
  }
  return t;
}

StatusOr<UsageAccumulator> UsageAccumulator::Create(UsageQuery query, Timestamp now) {
  if (query.since >= query.until) {
    return Status::InvalidArgument(fmt::format("since: {} is not before until ({})",
                                               FormatTimestamp(query.since),
                                               FormatTimestamp(query.until)));
  }
  if (query.by != UsagePeriod::kTotal) {
    int64_t step = query.by == UsagePeriod::kDay ? kDayUs : kWeekUs;
    int64_t span = ToMicros(query.until) - ToMicros(PeriodStart(query.by, query.since));
    int64_t periods = span / step + (span % step != 0);
    if (periods > kMaxUsagePeriods) {
      return Status::InvalidArgument(fmt::format(
          "since: from {} to {} is {} {}s; a report has at most {} periods: shorten the range "
          "or use by=week or by=total",
          FormatTimestamp(query.since), FormatTimestamp(query.until), periods,
          NameOf(kUsagePeriodNames, query.by), kMaxUsagePeriods));
    }
  }
  return UsageAccumulator(std::move(query), now);
}

Timestamp UsageAccumulator::PeriodEnd(Timestamp start) const {
  switch (query_.by) {
    case UsagePeriod::kDay:
      return start + Duration(kDayUs);
    case UsagePeriod::kWeek:
      return start + Duration(kWeekUs);
    case UsagePeriod::kTotal:
      break;
  }
  return query_.until;
}

UsageAccumulator::Sums* UsageAccumulator::Group(Timestamp at, const std::string& team,
                                                const std::string& user) {
  Timestamp period = query_.by == UsagePeriod::kTotal ? query_.since : PeriodStart(query_.by, at);
  Key key{ToMicros(period), team, user};
  auto it = groups_.find(key);
  if (it != groups_.end()) return &it->second;
  if (too_many_ || groups_.size() >= kMaxUsageRows) {
    too_many_ = true;
    return nullptr;
  }
  return &groups_.emplace(std::move(key), Sums{}).first->second;
}

void UsageAccumulator::AddHold(const state::TaskUsage& hold) {
  // An open hold runs until now; the report's range clips both ends.
  Timestamp start = std::max(hold.start, query_.since);
  Timestamp end = std::min(hold.end.value_or(now_), query_.until);
  Timestamp period =
      query_.by == UsagePeriod::kTotal ? query_.since : PeriodStart(query_.by, start);
  while (period < end) {
    Timestamp next = PeriodEnd(period);
    int64_t us = ToMicros(std::min(end, next)) - ToMicros(std::max(start, period));
    if (us > 0) {
      Sums* sums = Group(std::max(start, period), hold.team, hold.user);
      if (!sums) return;
      // Each product is exact in a double (well below 2^53 for any real hold).
      sums->gpu_us += static_cast<double>(hold.gpus * us);
      sums->cpu_us += static_cast<double>(hold.milli_cpus) * static_cast<double>(us) / 1000.0;
    }
    period = next;
  }
}

void UsageAccumulator::AddMilestone(const state::JobMilestone& m) {
  using Kind = state::JobMilestone::Kind;
  if (m.at < query_.since || m.at >= query_.until) return;
  Sums* sums = Group(m.at, m.team, m.user);
  if (!sums) return;
  switch (m.kind) {
    case Kind::kSubmitted:
      ++sums->submitted;
      break;
    case Kind::kAttemptStarted:
      ++sums->attempts;
      if (m.attempt == 1) {
        Duration delay = std::max(Duration(0), m.at - m.submitted_at);
        ++sums->started;
        sums->delay_total += delay;
        sums->delay_max = std::max(sums->delay_max, delay);
      }
      break;
    case Kind::kFinished:
      sums->succeeded += m.final_state == JobState::kSucceeded;
      sums->failed += m.final_state == JobState::kFailed;
      sums->killed += m.final_state == JobState::kKilled;
      break;
  }
}

StatusOr<UsageReport> UsageAccumulator::Finish() && {
  if (too_many_) {
    return Status::InvalidArgument(fmt::format(
        "the report would have more than {} rows (team, user and period); narrow it with team, "
        "user, a shorter range or a longer period",
        kMaxUsageRows));
  }
  UsageReport report;
  report.query = query_;
  report.now = now_;
  report.total.start = query_.since;
  report.total.end = query_.until;
  double total_gpu_us = 0, total_cpu_us = 0;
  auto fill = [](UsageRow& row, const Sums& s) {
    row.jobs_submitted += s.submitted;
    row.jobs_succeeded += s.succeeded;
    row.jobs_failed += s.failed;
    row.jobs_killed += s.killed;
    row.attempts += s.attempts;
    row.jobs_started += s.started;
    row.queue_delay_total += s.delay_total;
    row.queue_delay_max = std::max(row.queue_delay_max, s.delay_max);
  };
  for (const auto& [key, sums] : groups_) {
    UsageRow row;
    Timestamp period = FromMicros(std::get<0>(key));
    row.start = std::max(period, query_.since);
    row.end = std::min(PeriodEnd(period), query_.until);
    row.team = std::get<1>(key);
    row.user = std::get<2>(key);
    row.gpu_hours = sums.gpu_us / kHourUs;
    row.cpu_hours = sums.cpu_us / kHourUs;
    fill(row, sums);
    fill(report.total, sums);
    total_gpu_us += sums.gpu_us;
    total_cpu_us += sums.cpu_us;
    report.rows.push_back(std::move(row));
  }
  report.total.gpu_hours = total_gpu_us / kHourUs;
  report.total.cpu_hours = total_cpu_us / kHourUs;
  return report;
}

}  // namespace cohort::master
