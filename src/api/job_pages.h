// GET /api/v1/jobs beyond its first form (docs/api.md, "List"): filters by team, user and name,
// and pages newest first with a cursor, for lists that grow without end (the dashboard's).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "api/http_server.h"
#include "common/status.h"
#include "model/job.h"

namespace cohort::api {

struct JobListQuery {
  // `before` was given: newest first, below the cursor, with `next` in the answer. A cursor
  // rather than an offset, so that jobs submitted while one pages do not shift the pages.
  bool paged = false;
  JobId before = 0;  // only jobs with a smaller id; 0 (`before=` empty): from the newest
  std::string team;  // exactly this team
  std::string user;  // exactly this user
  std::string name;  // names that contain this
  bool narrowed() const { return !team.empty() || !user.empty() || !name.empty(); }
};

// kInvalidArgument naming the parameter for a `before` that is not a job id.
StatusOr<JobListQuery> JobPageFrom(const HttpRequest& request);

struct JobPage {
  std::vector<const Job*> jobs;
  // For a paged query: the `before` of the next page; nothing when this page is the last.
  std::optional<JobId> next;
};

// Of `jobs` (in id order, as the master lists them), those that `query` selects, at most
// `limit` (0: no limit): paged, newest first from the cursor; else the most recent, in id
// order, as the first form answers.
JobPage SelectJobs(const std::vector<const Job*>& jobs, const JobListQuery& query, size_t limit);

}  // namespace cohort::api
