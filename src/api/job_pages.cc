#include "api/job_pages.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "api/request_params.h"

namespace cohort::api {
namespace {

std::string QueryText(const HttpRequest& request, const std::string& name) {
  auto it = request.query.find(name);
  return it == request.query.end() ? std::string() : it->second;
}

bool Matches(const Job& job, const JobListQuery& query) {
  if (!query.team.empty() && job.spec.team != query.team) return false;
  if (!query.user.empty() && job.user != query.user) return false;
  if (query.sessions_only && !job.spec.session) return false;
  if (query.session_kind && job.spec.session && job.spec.session->kind != *query.session_kind) {
    return false;
  }
  return query.name.empty() || job.spec.name.find(query.name) != std::string::npos;
}

// The jobs of `first`..`last` (in the page's order) that `query` selects, until the page is full
// (its limit, or `max_bytes`); `next` is the last one's id when one more would have followed.
template <typename It>
JobPage Collect(It first, It last, const JobListQuery& query, const JobWriter& write,
                size_t max_bytes) {
  JobPage page;
  for (It it = first; it != last; ++it) {
    if (!Matches(**it, query)) continue;
    if (page.jobs.size() == query.limit || page.bytes >= max_bytes) {
      page.next = page.jobs.back()->id;  // one more exists: the page is full and not the last
      break;
    }
    page.jobs.push_back(*it);
    page.texts.push_back(write(**it));
    page.bytes += page.texts.back().size();
  }
  return page;
}

}  // namespace

StatusOr<JobListQuery> JobPageFrom(const HttpRequest& request) {
  JobListQuery query;
  bool before = request.query.count("before") > 0;
  bool after = request.query.count("after") > 0;
  if (before && after) {
    return Status::InvalidArgument(
        "before, after: give one of them (before: newest first, after: oldest first)");
  }
  if (before || after) {
    const char* name = before ? "before" : "after";
    auto cursor = QueryInt(request, name, 0, 1, INT64_MAX);
    if (!cursor.ok()) return cursor.status();
    query.order = before ? JobOrder::kBefore : JobOrder::kAfter;
    query.cursor = *cursor;
  }
  auto limit = PageLimit(request, kDefaultJobPage, kMaxJobPage, "jobs");
  if (!limit.ok()) return limit.status();
  query.limit = *limit;
  query.team = QueryText(request, "team");
  query.user = QueryText(request, "user");
  query.name = QueryText(request, "name");
  if (std::string session = QueryText(request, "session"); !session.empty()) {
    query.sessions_only = true;
    if (session != "any") {
      query.session_kind = ParseSessionKind(session);
      if (!query.session_kind) {
        return Status::InvalidArgument(fmt::format(
            "session: \"{}\" is no kind of session; use shell, notebook or any", session));
      }
    }
  }
  return query;
}

JobPage SelectJobs(const std::vector<const Job*>& jobs, const JobListQuery& query,
                   const JobWriter& write, size_t max_bytes) {
  const JobId cursor = query.cursor;
  if (query.order == JobOrder::kAfter) {
    auto from = std::upper_bound(jobs.begin(), jobs.end(), cursor,
                                 [](JobId id, const Job* job) { return id < job->id; });
    return Collect(from, jobs.end(), query, write, max_bytes);
  }
  auto end = jobs.end();
  if (query.order == JobOrder::kBefore && cursor > 0) {
    end = std::lower_bound(jobs.begin(), jobs.end(), cursor,
                           [](const Job* job, JobId id) { return job->id < id; });
  }
  JobPage page = Collect(std::make_reverse_iterator(end), jobs.rend(), query, write, max_bytes);
  if (query.order == JobOrder::kRecent) {
    std::reverse(page.jobs.begin(), page.jobs.end());
    std::reverse(page.texts.begin(), page.texts.end());
  }
  return page;
}

std::string JobPageAnswer(const JobPage& page) {
  std::string out;
  out.reserve(page.bytes + page.texts.size() + 64);
  out += "{\"jobs\":[";
  for (size_t i = 0; i < page.texts.size(); ++i) {
    if (i > 0) out += ',';
    out += page.texts[i];
  }
  out += "],\"next\":";
  out += page.next ? std::to_string(*page.next) : "null";
  out += '}';
  return out;
}

}  // namespace cohort::api
