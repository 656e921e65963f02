// GET /api/v1/jobs (docs/api.md, "List"): filters by team, user, name and session, and pages. Every
// answer is a page, bounded in jobs (kMaxJobPage; kDefaultJobPage without `limit`) and in bytes
// (kMaxPageBytes), with `next` when more remain: the master never builds every job into one
// answer.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "api/http_server.h"
#include "common/status.h"
#include "model/job.h"
#include "model/limits.h"

namespace cohort::api {

// Where a page starts, and in which order it goes. A cursor rather than an offset, so that jobs
// submitted while one pages do not shift the pages.
enum class JobOrder {
  kRecent,  // no cursor: the most recent, in submission order; `next` is a `before`
  kBefore,  // `before=ID`: newest first, ids below ID (empty: from the newest)
  kAfter,   // `after=ID`: oldest first, ids above ID (empty: from the oldest)
};

struct JobListQuery {
  JobOrder order = JobOrder::kRecent;
  JobId cursor = 0;  // the `before` or `after` id; 0: from the newest (before) or oldest (after)
  size_t limit = kDefaultJobPage;
  std::string team;  // exactly this team
  std::string user;  // exactly this user
  std::string name;  // names that contain this
  // Sessions only (docs/runtimes.md): of this kind, or of any kind.
  std::optional<SessionKind> session_kind;
  bool sessions_only = false;
};

// kInvalidArgument naming the parameter for a `before` or `after` that is not a job id, for both
// at once, and for a bad `limit` (PageLimit).
StatusOr<JobListQuery> JobPageFrom(const HttpRequest& request);

// A job's JSON text as the caller may see it.
using JobWriter = std::function<std::string(const Job&)>;

struct JobPage {
  std::vector<const Job*> jobs;
  std::vector<std::string> texts;  // each job's JSON, as the writer wrote it
  size_t bytes = 0;                // of `texts` together
  // The cursor of the next page (a `before` for kRecent and kBefore, an `after` for kAfter);
  // nothing when this page is the last.
  std::optional<JobId> next;
};

// Of `jobs` (in id order, as the master lists them), the page that `query` selects, in its
// order: at most `query.limit` jobs, and no more once their JSON reaches `max_bytes` (a page
// holds at least one job, so it may pass `max_bytes` by one job's JSON). Only the page's jobs
// are written.
JobPage SelectJobs(const std::vector<const Job*>& jobs, const JobListQuery& query,
                   const JobWriter& write, size_t max_bytes = kMaxPageBytes);

// The answer: `{"jobs": [...], "next": N}` (`next` null on the last page).
std::string JobPageAnswer(const JobPage& page);

}  // namespace cohort::api
