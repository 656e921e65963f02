// The accounting and audit routes (docs/api.md): GET /api/v1/usage and GET /api/v1/audit, and
// the start of every state-changing call's audit entry (api/audit_hook.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <initializer_list>
#include <string_view>

#include "api/api_server.h"
#include "api/audit_hook.h"
#include "api/request_params.h"
#include "common/strings.h"
#include "common/units.h"
#include "model/json.h"

namespace cohort::api {
namespace {

// Without `since`, a report covers this much before `until`.
constexpr Duration kDefaultUsageRange = std::chrono::hours(24 * 30);
constexpr int64_t kDefaultAuditLimit = 100;
constexpr int64_t kMaxAuditLimit = 10'000;
// A team or user name to filter by: longer than any name a job can have.
constexpr size_t kMaxNameFilter = 128;

HttpResponse Answer(const Json& body) {
  return HttpResponse{200, "application/json",
                      body.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

std::string Param(const HttpRequest& request, const std::string& name) {
  auto it = request.query.find(name);
  return it == request.query.end() ? std::string() : it->second;
}

StatusOr<std::string> NameFilter(const HttpRequest& request, const std::string& name) {
  std::string value = Param(request, name);
  if (value.size() > kMaxNameFilter) {
    return Status::InvalidArgument(
        fmt::format("{}: longer than {} bytes, which no {} is", name, kMaxNameFilter, name));
  }
  return value;
}

// `fallback` when the parameter is absent or empty.
StatusOr<Timestamp> TimeParam(const HttpRequest& request, const std::string& name, Timestamp now,
                              Timestamp fallback) {
  std::string value = Param(request, name);
  if (value.empty()) return fallback;
  auto t = ParseTimeSpec(value, now);
  if (!t.ok()) return Status::InvalidArgument(fmt::format("{}: {}", name, t.status().message()));
  return *t;
}

Json OrNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

double Seconds(Duration d) { return static_cast<double>(d.count()) / 1e6; }

Json RowJson(const master::UsageRow& row) {
  Json j{{"start", FormatTimestamp(row.start)},
         {"end", FormatTimestamp(row.end)},
         {"gpu_hours", row.gpu_hours},
         {"cpu_hours", row.cpu_hours},
         {"jobs_submitted", row.jobs_submitted},
         {"jobs_succeeded", row.jobs_succeeded},
         {"jobs_failed", row.jobs_failed},
         {"jobs_killed", row.jobs_killed},
         {"attempts", row.attempts},
         {"jobs_started", row.jobs_started}};
  if (row.jobs_started > 0) {
    j["queue_delay_mean_s"] =
        Seconds(row.queue_delay_total) / static_cast<double>(row.jobs_started);
    j["queue_delay_max_s"] = Seconds(row.queue_delay_max);
  } else {
    j["queue_delay_mean_s"] = nullptr;
    j["queue_delay_max_s"] = nullptr;
  }
  return j;
}

Json EntryJson(const state::AuditEntry& e) {
  return Json{{"seq", e.seq},
              {"time", FormatTimestamp(e.time)},
              {"user", e.user},
              {"remote", e.remote},
              {"method", e.method},
              {"path", e.path},
              {"target", OrNull(e.target)},
              {"status", e.status ? Json(*e.status) : Json(nullptr)},
              {"outcome", OrNull(e.outcome)}};
}

Json UsageJson(const master::UsageQuery& query, const master::UsageReport& report) {
  Json rows = Json::array();
  for (const auto& row : report.rows) {
    Json j = RowJson(row);
    // A day or week is named by its first day; a report by total has one period, the range.
    j["period"] =
        query.by == master::UsagePeriod::kTotal
            ? Json(nullptr)
            : Json(FormatTimestamp(master::PeriodStart(query.by, row.start)).substr(0, 10));
    j["team"] = row.team;
    j["user"] = row.user;
    rows.push_back(std::move(j));
  }
  return Json{{"since", FormatTimestamp(query.since)},
              {"until", FormatTimestamp(query.until)},
              {"by", NameOf(master::kUsagePeriodNames, query.by)},
              {"team", OrNull(query.team)},
              {"user", OrNull(query.user)},
              {"now", FormatTimestamp(report.now)},
              {"rows", rows},
              {"total", RowJson(report.total)}};
}

}  // namespace

std::shared_ptr<Responder> ApiServer::StartAudit(const HttpRequest& request,
                                                 const PathParams& params, std::string who,
                                                 std::shared_ptr<Responder> responder) {
  state::AuditEntry entry = BeginEntry(request, params, std::move(who));
  auto seq = master_.audit().Begin(entry);
  if (!seq.ok()) {
    spdlog::error("audit: refused {} {} from {}: {}", entry.method, entry.path, entry.remote,
                  seq.status().ToString());
    StatusCode code = seq.status().code() == StatusCode::kResourceExhausted
                          ? StatusCode::kResourceExhausted
                          : StatusCode::kInternal;
    SendAnswer(*responder,
               Status(code, fmt::format("refused: the call could not be recorded in the audit log "
                                        "({}); nothing was done",
                                        seq.status().message())));
    return nullptr;
  }
  AuditedCall call{entry.method, entry.path, entry.remote, !request.body.empty(), entry.target};
  return std::make_shared<AuditingResponder>(
      std::move(responder), std::move(call),
      [&master = master_, seq = *seq](int status, const AuditOutcome& outcome) {
        return master.audit().Finish(seq, status, outcome.target, outcome.outcome);
      });
}

Status ApiServer::Usage(const Call& call) {
  const HttpRequest& request = call.request;
  COHORT_RETURN_IF_ERROR(CheckQuery(request, {"team", "user", "since", "until", "by"}));
  Timestamp now = master_.Now();
  master::UsageQuery query;
  COHORT_ASSIGN_OR_RETURN(auto until, TimeParam(request, "until", now, now));
  COHORT_ASSIGN_OR_RETURN(auto since, TimeParam(request, "since", now, until - kDefaultUsageRange));
  COHORT_ASSIGN_OR_RETURN(auto team, NameFilter(request, "team"));
  COHORT_ASSIGN_OR_RETURN(auto user, NameFilter(request, "user"));
  query.since = since;
  query.until = until;
  query.team = team;
  query.user = user;
  if (std::string by = Param(request, "by"); !by.empty()) {
    auto period = Parse(master::kUsagePeriodNames, by);
    if (!period) {
      return Status::InvalidArgument(fmt::format("by: \"{}\" is not a period; use {}", by,
                                                 NameList(master::kUsagePeriodNames)));
    }
    query.by = *period;
  }
  // Computed off the event loop (master/usage_reader.h); answered back on it.
  master_.usage().Compute(query, [query, responder =
                                             call.responder](StatusOr<master::UsageReport> report) {
    SendAnswer(*responder, report.ok() ? StatusOr<HttpResponse>(Answer(UsageJson(query, *report)))
                                       : report.status());
  });
  return Status::Ok();
}

StatusOr<HttpResponse> ApiServer::AuditLog(const Call& call) {
  const HttpRequest& request = call.request;
  COHORT_RETURN_IF_ERROR(CheckQuery(request, {"since", "until", "user", "limit", "job"}));
  Timestamp now = master_.Now();
  COHORT_ASSIGN_OR_RETURN(auto since, TimeParam(request, "since", now, FromMicros(0)));
  COHORT_ASSIGN_OR_RETURN(auto until, TimeParam(request, "until", now, FromMicros(INT64_MAX)));
  COHORT_ASSIGN_OR_RETURN(auto user, NameFilter(request, "user"));
  int64_t limit = kDefaultAuditLimit;
  if (std::string text = Param(request, "limit"); !text.empty()) {
    auto n = ParseInteger(text, 1, kMaxAuditLimit);
    if (!n) {
      return Status::InvalidArgument(
          fmt::format("limit: \"{}\" is not an integer from 1 to {}", text, kMaxAuditLimit));
    }
    limit = *n;
  }
  // The calls about one job: its submission, kills, ... (the audit hook names it "job N").
  std::string target;
  if (std::string job = Param(request, "job"); !job.empty()) {
    auto id = ParseJobId(job);
    if (!id.ok()) return Status::InvalidArgument(fmt::format("job: {}", id.status().message()));
    target = fmt::format("job {}", *id);
  }
  // One more than asked tells whether there were more.
  COHORT_ASSIGN_OR_RETURN(auto entries, master_.audit().Read(state::AuditQuery{
                                            since, until, user, limit + 1, std::move(target)}));
  bool more = static_cast<int64_t>(entries.size()) > limit;
  Json list = Json::array();
  for (size_t i = more ? 1 : 0; i < entries.size(); ++i) list.push_back(EntryJson(entries[i]));
  return Answer(Json{{"entries", list}, {"more", more}});
}

}  // namespace cohort::api
