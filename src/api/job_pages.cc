#include "api/job_pages.h"

#include <algorithm>
#include <cstdint>

#include "api/request_params.h"

namespace cohort::api {
namespace {

std::string QueryText(const HttpRequest& request, const std::string& name) {
  auto it = request.query.find(name);
  return it == request.query.end() ? std::string() : it->second;
}

bool Selected(const Job& job, const JobListQuery& query) {
  if (query.paged && query.before > 0 && job.id >= query.before) return false;
  if (!query.team.empty() && job.spec.team != query.team) return false;
  if (!query.user.empty() && job.user != query.user) return false;
  return query.name.empty() || job.spec.name.find(query.name) != std::string::npos;
}

}  // namespace

StatusOr<JobListQuery> JobPageFrom(const HttpRequest& request) {
  JobListQuery query;
  query.paged = request.query.count("before") > 0;
  auto before = QueryInt(request, "before", 0, 1, INT64_MAX);
  if (!before.ok()) return before.status();
  query.before = *before;
  query.team = QueryText(request, "team");
  query.user = QueryText(request, "user");
  query.name = QueryText(request, "name");
  return query;
}

JobPage SelectJobs(const std::vector<const Job*>& jobs, const JobListQuery& query, size_t limit) {
  JobPage page;
  for (auto it = jobs.rbegin(); it != jobs.rend(); ++it) {
    if (!Selected(**it, query)) continue;
    if (limit > 0 && page.jobs.size() == limit) {
      // One more exists: the page is full and not the last.
      if (query.paged) page.next = page.jobs.back()->id;
      break;
    }
    page.jobs.push_back(*it);
  }
  if (!query.paged) std::reverse(page.jobs.begin(), page.jobs.end());
  return page;
}

}  // namespace cohort::api
