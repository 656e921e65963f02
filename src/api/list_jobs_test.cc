// GET /api/v1/jobs with filters and pages (api/job_pages.h).
#include <gtest/gtest.h>

#include "api/job_pages.h"

namespace cohort::api {
namespace {

// Jobs 1..10: odd ones of team vision by ada named "train-N", even ones of nlp by bob "eval-N".
class JobPages : public ::testing::Test {
 protected:
  JobPages() {
    for (JobId id = 1; id <= 10; ++id) {
      Job job;
      job.id = id;
      job.user = id % 2 ? "ada" : "bob";
      job.spec.team = id % 2 ? "vision" : "nlp";
      job.spec.name = (id % 2 ? "train-" : "eval-") + std::to_string(id);
      store_.push_back(job);
    }
    for (const Job& job : store_) all_.push_back(&job);
  }

  static std::vector<JobId> Ids(const JobPage& page) {
    std::vector<JobId> ids;
    for (const Job* job : page.jobs) ids.push_back(job->id);
    return ids;
  }

  static JobListQuery Query(std::map<std::string, std::string> params) {
    HttpRequest request;
    request.query = std::move(params);
    auto query = JobPageFrom(request);
    EXPECT_TRUE(query.ok()) << query.status().ToString();
    return *query;
  }

  std::vector<Job> store_;
  std::vector<const Job*> all_;
};

TEST_F(JobPages, PagesGoNewestFirstFromTheCursorUntilNextIsNull) {
  JobPage first = SelectJobs(all_, Query({{"before", ""}}), 4);
  EXPECT_EQ(Ids(first), (std::vector<JobId>{10, 9, 8, 7}));
  ASSERT_EQ(first.next, 7);
  JobPage second = SelectJobs(all_, Query({{"before", "7"}}), 4);
  EXPECT_EQ(Ids(second), (std::vector<JobId>{6, 5, 4, 3}));
  ASSERT_EQ(second.next, 3);
  JobPage last = SelectJobs(all_, Query({{"before", "3"}}), 4);
  EXPECT_EQ(Ids(last), (std::vector<JobId>{2, 1}));
  EXPECT_FALSE(last.next);
  // A page that ends exactly at the oldest job is the last one too.
  EXPECT_FALSE(SelectJobs(all_, Query({{"before", "5"}}), 4).next);
  // A job submitted while paging does not shift the pages below it.
  Job eleven = store_.front();
  eleven.id = 11;
  std::vector<const Job*> grown = all_;
  grown.push_back(&eleven);
  EXPECT_EQ(Ids(SelectJobs(grown, Query({{"before", "7"}}), 4)), Ids(second));
}

TEST_F(JobPages, FiltersCombineAndApplyBeforeTheLimit) {
  EXPECT_EQ(Ids(SelectJobs(all_, Query({{"before", ""}, {"team", "vision"}}), 2)),
            (std::vector<JobId>{9, 7}));
  EXPECT_EQ(Ids(SelectJobs(all_, Query({{"before", ""}, {"user", "bob"}, {"name", "eval-1"}}), 0)),
            (std::vector<JobId>{10}));
  EXPECT_EQ(Ids(SelectJobs(all_, Query({{"before", "6"}, {"name", "train"}}), 0)),
            (std::vector<JobId>{5, 3, 1}));
  EXPECT_TRUE(SelectJobs(all_, Query({{"before", ""}, {"team", "nosuch"}}), 10).jobs.empty());
}

// Without `before` the answer keeps its first form (the CLI reads it): the most recent
// `limit`, oldest first, filters or not.
TEST_F(JobPages, WithoutACursorTheMostRecentComeInSubmissionOrder) {
  JobPage page = SelectJobs(all_, Query({{"team", "nlp"}}), 3);
  EXPECT_EQ(Ids(page), (std::vector<JobId>{6, 8, 10}));
  EXPECT_FALSE(page.next);
  EXPECT_FALSE(Query({{"limit", "3"}}).paged);
}

TEST_F(JobPages, ACursorThatIsNoJobIdIsRefusedNamingIt) {
  HttpRequest request;
  for (const char* bad : {"x", "-1", "0", "1.5"}) {
    request.query = {{"before", bad}};
    auto query = JobPageFrom(request);
    ASSERT_FALSE(query.ok()) << bad;
    EXPECT_EQ(query.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(query.status().message().find("before:"), std::string::npos);
  }
}

}  // namespace
}  // namespace cohort::api
