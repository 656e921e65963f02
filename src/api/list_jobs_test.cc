// GET /api/v1/jobs with filters and pages (api/job_pages.h): the page selection alone, then the
// route through the real ApiServer and Master (served without a socket) holding more jobs than
// a page; and the pages of a job's events (GET /api/v1/jobs/{id}/events).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <map>

#include "api/api_server.h"
#include "api/hand_run_loop.h"
#include "api/job_pages.h"
#include "api/served_master_test_fixture.h"
#include "model/json.h"
#include "scheduler/scheduler.h"
#include "testing/memory_state_store.h"

namespace cohort::api {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

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

  // Each job written as {"id":N}, padded with spaces to `width` bytes when that is more.
  static JobPage Select(const std::vector<const Job*>& jobs, const JobListQuery& query,
                        size_t max_bytes = kMaxPageBytes, size_t width = 0) {
    return SelectJobs(
        jobs, query,
        [width](const Job& job) {
          std::string text = fmt::format("{{\"id\":{}}}", job.id);
          if (text.size() < width) text.insert(1, width - text.size(), ' ');
          return text;
        },
        max_bytes);
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
  JobPage first = Select(all_, Query({{"before", ""}, {"limit", "4"}}));
  EXPECT_EQ(Ids(first), (std::vector<JobId>{10, 9, 8, 7}));
  ASSERT_EQ(first.next, 7);
  JobPage second = Select(all_, Query({{"before", "7"}, {"limit", "4"}}));
  EXPECT_EQ(Ids(second), (std::vector<JobId>{6, 5, 4, 3}));
  ASSERT_EQ(second.next, 3);
  JobPage last = Select(all_, Query({{"before", "3"}, {"limit", "4"}}));
  EXPECT_EQ(Ids(last), (std::vector<JobId>{2, 1}));
  EXPECT_FALSE(last.next);
  // A page that ends exactly at the oldest job is the last one too.
  EXPECT_FALSE(Select(all_, Query({{"before", "5"}, {"limit", "4"}})).next);
  // A job submitted while paging does not shift the pages below it.
  Job eleven = store_.front();
  eleven.id = 11;
  std::vector<const Job*> grown = all_;
  grown.push_back(&eleven);
  EXPECT_EQ(Ids(Select(grown, Query({{"before", "7"}, {"limit", "4"}}))), Ids(second));
}

TEST_F(JobPages, AfterPagesGoOldestFirstUntilTheNewest) {
  JobPage first = Select(all_, Query({{"after", ""}, {"limit", "4"}}));
  EXPECT_EQ(Ids(first), (std::vector<JobId>{1, 2, 3, 4}));
  ASSERT_EQ(first.next, 4);
  JobPage second = Select(all_, Query({{"after", "4"}, {"limit", "4"}}));
  EXPECT_EQ(Ids(second), (std::vector<JobId>{5, 6, 7, 8}));
  ASSERT_EQ(second.next, 8);
  JobPage last = Select(all_, Query({{"after", "8"}, {"limit", "4"}}));
  EXPECT_EQ(Ids(last), (std::vector<JobId>{9, 10}));
  EXPECT_FALSE(last.next);
  EXPECT_FALSE(Select(all_, Query({{"after", "6"}, {"limit", "4"}})).next) << "ends at 10";
  EXPECT_TRUE(Select(all_, Query({{"after", "10"}})).jobs.empty());
  // Filters apply before the limit, and a cursor need not be a job the filter selects.
  JobPage vision = Select(all_, Query({{"after", "4"}, {"limit", "2"}, {"team", "vision"}}));
  EXPECT_EQ(Ids(vision), (std::vector<JobId>{5, 7}));
  EXPECT_EQ(vision.next, 7);
}

TEST_F(JobPages, FiltersCombineAndApplyBeforeTheLimit) {
  EXPECT_EQ(Ids(Select(all_, Query({{"before", ""}, {"team", "vision"}, {"limit", "2"}}))),
            (std::vector<JobId>{9, 7}));
  EXPECT_EQ(Ids(Select(all_, Query({{"before", ""}, {"user", "bob"}, {"name", "eval-1"}}))),
            (std::vector<JobId>{10}));
  EXPECT_EQ(Ids(Select(all_, Query({{"before", "6"}, {"name", "train"}}))),
            (std::vector<JobId>{5, 3, 1}));
  EXPECT_TRUE(Select(all_, Query({{"before", ""}, {"team", "nosuch"}})).jobs.empty());
}

// The dashboard's sessions list: sessions only, of one kind or any.
TEST_F(JobPages, SessionsAreSelectedByKindOrAll) {
  store_[2].spec.session = SessionSpec{SessionKind::kShell, std::nullopt};     // job 3
  store_[5].spec.session = SessionSpec{SessionKind::kNotebook, std::nullopt};  // job 6
  EXPECT_EQ(Ids(Select(all_, Query({{"before", ""}, {"session", "any"}}))),
            (std::vector<JobId>{6, 3}));
  EXPECT_EQ(Ids(Select(all_, Query({{"before", ""}, {"session", "notebook"}}))),
            (std::vector<JobId>{6}));
  EXPECT_EQ(Ids(Select(all_, Query({{"before", ""}, {"session", "shell"}, {"user", "ada"}}))),
            (std::vector<JobId>{3}));
  HttpRequest request;
  request.query = {{"session", "desktop"}};
  auto refused = JobPageFrom(request);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("session: \"desktop\" is no kind of session"));
}

// Without a cursor (the first form): the most recent `limit`, oldest first, filters or not,
// with the `before` of the older ones when some remain.
TEST_F(JobPages, WithoutACursorTheMostRecentComeInSubmissionOrder) {
  JobPage page = Select(all_, Query({{"team", "nlp"}, {"limit", "3"}}));
  EXPECT_EQ(Ids(page), (std::vector<JobId>{6, 8, 10}));
  EXPECT_EQ(page.next, 6);
  EXPECT_EQ(Ids(Select(all_, Query({{"before", "6"}, {"team", "nlp"}}))),
            (std::vector<JobId>{4, 2}));
  JobPage every = Select(all_, Query({}));
  EXPECT_EQ(every.jobs.size(), 10u);
  EXPECT_FALSE(every.next);
  EXPECT_EQ(Query({{"limit", "3"}}).order, JobOrder::kRecent);
}

TEST_F(JobPages, ALimitIsAPageSizeAndWithoutOneThePageIsTheDefault) {
  EXPECT_EQ(Query({}).limit, kDefaultJobPage);
  EXPECT_EQ(Query({{"limit", ""}}).limit, kDefaultJobPage);
  EXPECT_EQ(Query({{"limit", std::to_string(kMaxJobPage)}}).limit, kMaxJobPage);
  HttpRequest request;
  request.query = {{"limit", std::to_string(kMaxJobPage + 1)}};
  auto over = JobPageFrom(request);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(over.status().message(), HasSubstr("limit: 1001 is more than a page holds"));
  EXPECT_THAT(over.status().message(), HasSubstr("at most 1000 jobs"));
  // 0 once meant "every job": now it is refused, never silently a page.
  for (const char* bad : {"0", "-3", "x", "99999999999999999999"}) {
    request.query = {{"limit", bad}};
    auto refused = JobPageFrom(request);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_THAT(refused.status().message(), HasSubstr("limit: ")) << bad;
    EXPECT_THAT(refused.status().message(), HasSubstr("1000")) << bad;
  }
}

// However large each job is, a page stops once its JSON reaches the byte bound; `next` says
// more remain, in every order.
TEST_F(JobPages, APageStopsOnceItsJsonReachesTheByteBound) {
  JobPage recent = Select(all_, Query({}), 250, 100);
  EXPECT_EQ(Ids(recent), (std::vector<JobId>{8, 9, 10}));
  EXPECT_EQ(recent.bytes, 300u);
  EXPECT_EQ(recent.next, 8);
  JobPage older = Select(all_, Query({{"before", "8"}}), 250, 100);
  EXPECT_EQ(Ids(older), (std::vector<JobId>{7, 6, 5}));
  EXPECT_EQ(older.next, 5);
  JobPage oldest = Select(all_, Query({{"after", ""}}), 250, 100);
  EXPECT_EQ(Ids(oldest), (std::vector<JobId>{1, 2, 3}));
  EXPECT_EQ(oldest.next, 3);
  // One job larger than the bound still makes a page: the list always moves on.
  JobPage huge = Select(all_, Query({{"after", "3"}}), 50, 100);
  EXPECT_EQ(Ids(huge), (std::vector<JobId>{4}));
  EXPECT_EQ(huge.next, 4);
  // The last page ends with the list, bound or not.
  EXPECT_FALSE(Select(all_, Query({{"after", "7"}}), 250, 100).next);
}

TEST_F(JobPages, TheAnswerHoldsTheWrittenJobsAndTheCursor) {
  auto parsed = ParseJson(JobPageAnswer(Select(all_, Query({{"limit", "2"}}))));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, Json::parse(R"({"jobs": [{"id": 9}, {"id": 10}], "next": 9})"));
  parsed = ParseJson(JobPageAnswer(Select(all_, Query({{"team", "nosuch"}}))));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, Json::parse(R"({"jobs": [], "next": null})"));
}

TEST_F(JobPages, ACursorThatIsNoJobIdIsRefusedNamingIt) {
  HttpRequest request;
  for (const char* name : {"before", "after"}) {
    for (const char* bad : {"x", "-1", "0", "1.5"}) {
      request.query = {{name, bad}};
      auto query = JobPageFrom(request);
      ASSERT_FALSE(query.ok()) << name << "=" << bad;
      EXPECT_EQ(query.status().code(), StatusCode::kInvalidArgument);
      EXPECT_THAT(query.status().message(), HasSubstr(std::string(name) + ":"));
    }
  }
  request.query = {{"before", "5"}, {"after", "2"}};
  auto both = JobPageFrom(request);
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(both.status().message(), HasSubstr("before, after: give one of them"));
}

// The routes themselves, through the real master: however many jobs (or events of a job) it
// holds, one answer holds at most a page, and `next` leads to the rest.
class ListRoutes : public ServedMaster {
 protected:
  // One user queues more jobs here than the default cap allows (docs/api.md, "Queue caps").
  void Configure(master::MasterConfig& config) override { config.max_queued_per_user = 0; }

  // Submits `n` jobs through the API (no node: they stay pending); the scheduler runs once.
  void Submit(int n) {
    for (int i = 1; i <= n; ++i) {
      std::string spec = fmt::format(
          R"({{"name": "job-{}", "tasks": [{{"role": "main", "command": ["true"]}}]}})", i);
      ASSERT_EQ(Serve("POST", "/api/v1/jobs", {}, spec).status, 201) << i;
    }
  }

  Json List(std::map<std::string, std::string> query) { return Get("/api/v1/jobs", query); }

  Json Get(const std::string& path, std::map<std::string, std::string> query) {
    HttpResponse r = Serve("GET", path, std::move(query));
    EXPECT_EQ(r.status, 200) << r.body;
    auto doc = ParseJson(r.body);
    EXPECT_TRUE(doc.ok()) << r.body;
    return doc.ok() ? *doc : Json();
  }

  static std::vector<JobId> Ids(const Json& answer) {
    std::vector<JobId> ids;
    for (const auto& job : answer["jobs"]) ids.push_back(job["id"].get<JobId>());
    return ids;
  }
};

TEST_F(ListRoutes, WithoutALimitTheAnswerIsTheDefaultPageAndNextLeadsToTheRest) {
  const int total = static_cast<int>(kMaxJobPage) + 150;  // more than the largest page
  Submit(total);
  // What `cohort jobs` sent before it paged: the most recent page, in submission order.
  Json first = List({});
  ASSERT_EQ(first["jobs"].size(), kDefaultJobPage);
  EXPECT_EQ(first["jobs"].front()["id"], total - static_cast<int>(kDefaultJobPage) + 1);
  EXPECT_EQ(first["jobs"].back()["id"], total);
  ASSERT_TRUE(first["next"].is_number_integer()) << "more remain: " << first["next"];
  // Its `next` is the `before` of the older ones.
  std::vector<JobId> seen = Ids(first);
  for (Json page = first; !page["next"].is_null();) {
    page = List({{"before", page["next"].dump()}, {"limit", std::to_string(kMaxJobPage)}});
    ASSERT_LE(page["jobs"].size(), kMaxJobPage);
    std::vector<JobId> ids = Ids(page);
    seen.insert(seen.end(), ids.begin(), ids.end());
  }
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen.size(), static_cast<size_t>(total));
  for (int i = 0; i < total; ++i) EXPECT_EQ(seen[i], i + 1);

  // The largest page is refused one more, naming the field and the maximum.
  HttpResponse over = Serve("GET", "/api/v1/jobs", {{"limit", std::to_string(kMaxJobPage + 1)}});
  EXPECT_EQ(over.status, 400);
  EXPECT_THAT(over.body, HasSubstr("limit: 1001 is more than a page holds"));
  EXPECT_THAT(over.body, HasSubstr("at most 1000 jobs"));
  Json largest = List({{"limit", std::to_string(kMaxJobPage)}, {"state", "pending"}});
  EXPECT_EQ(largest["jobs"].size(), kMaxJobPage);
  EXPECT_EQ(largest["next"], total - static_cast<int>(kMaxJobPage) + 1);
}

TEST_F(ListRoutes, AfterPagesWalkEveryJobOldestFirstThenNextIsNull) {
  const int total = static_cast<int>(kDefaultJobPage) + 20;
  Submit(total);
  std::vector<JobId> seen;
  Json page = List({{"after", ""}});
  for (int pages = 1;; ++pages) {
    ASSERT_LE(page["jobs"].size(), kDefaultJobPage);
    std::vector<JobId> ids = Ids(page);
    seen.insert(seen.end(), ids.begin(), ids.end());
    if (page["next"].is_null()) {
      EXPECT_EQ(pages, 2);
      break;
    }
    EXPECT_EQ(page["next"], seen.back());
    page = List({{"after", page["next"].dump()}});
  }
  ASSERT_EQ(seen.size(), static_cast<size_t>(total));
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  // The last page of the first form says so too.
  EXPECT_TRUE(List({{"limit", "1000"}})["next"].is_null());
}

// Jobs of large specs (about 210 KiB each, within a spec's 256 KiB): the default page of 500
// would be 100 MiB; the byte bound keeps it near 4 MiB, and `next` leads to the rest.
TEST_F(ListRoutes, LargeJobsMakeShorterPagesNotLargerAnswers) {
  const int total = 30;
  Json env = Json::object();
  for (int v = 0; v < 7; ++v) env[fmt::format("BIG_{}", v)] = std::string(30 * 1024, 'x');
  for (int i = 1; i <= total; ++i) {
    Json spec{
        {"name", fmt::format("big-{}", i)},
        {"tasks", Json::array({Json{{"role", "main"}, {"command", {"true"}}, {"env", env}}})}};
    ASSERT_EQ(Serve("POST", "/api/v1/jobs", {}, spec.dump()).status, 201) << i;
  }
  HttpResponse first = Serve("GET", "/api/v1/jobs");
  ASSERT_EQ(first.status, 200);
  EXPECT_LT(first.body.size(), kMaxPageBytes + 256 * 1024);
  EXPECT_GT(first.body.size(), kMaxPageBytes);
  auto doc = ParseJson(first.body);
  ASSERT_TRUE(doc.ok());
  EXPECT_LT((*doc)["jobs"].size(), static_cast<size_t>(total));
  ASSERT_TRUE((*doc)["next"].is_number_integer());
  size_t seen = 0;
  for (Json page = List({{"after", ""}});; page = List({{"after", page["next"].dump()}})) {
    seen += page["jobs"].size();
    if (page["next"].is_null()) break;
  }
  EXPECT_EQ(seen, static_cast<size_t>(total));
}

// A job with more events than a page (written to the store as a long life of retries would):
// pages of at most 1,000, oldest first, `next` the `after` of the next; large events make
// shorter pages.
TEST_F(ListRoutes, AJobsEventsComeAPageAtATime) {
  Submit(1);  // its first event: "submitted"
  auto job = master_->GetJob(1);
  ASSERT_TRUE(job.ok());
  const int more = 2 * static_cast<int>(kMaxEventPage) + 500;
  std::vector<JobEvent> events;
  for (int i = 1; i <= more; ++i) {
    events.push_back(JobEvent{1, clock_.Now(), "task_ended", fmt::format("event {}", i)});
  }
  ASSERT_TRUE(disk_.SaveJob(**job, events).ok());
  Json first = Get("/api/v1/jobs/1/events", {});
  ASSERT_EQ(first["events"].size(), kDefaultEventPage);
  EXPECT_EQ(first["events"][0]["type"], "submitted");
  EXPECT_EQ(first["next"], kDefaultEventPage);
  std::vector<std::string> messages;
  for (Json page = first;; page = Get("/api/v1/jobs/1/events", {{"after", page["next"].dump()}})) {
    ASSERT_LE(page["events"].size(), kMaxEventPage);
    for (const auto& e : page["events"]) messages.push_back(e["message"].get<std::string>());
    if (page["next"].is_null()) break;
    ASSERT_EQ(page["next"], messages.size());
  }
  ASSERT_EQ(messages.size(), static_cast<size_t>(more + 1));
  EXPECT_EQ(messages[1], "event 1");
  EXPECT_EQ(messages.back(), fmt::format("event {}", more));
  Json tail = Get("/api/v1/jobs/1/events", {{"after", std::to_string(more - 1)}, {"limit", "5"}});
  ASSERT_EQ(tail["events"].size(), 2u);
  EXPECT_TRUE(tail["next"].is_null());

  for (auto [query, says] : std::vector<std::pair<std::map<std::string, std::string>, std::string>>{
           {{{"limit", "1001"}},
            "limit: 1001 is more than a page holds; pages hold at most 1000 "
            "events"},
           {{{"limit", "0"}}, "is not a page size; pages hold 1 to 1000 events"},
           {{{"after", "-1"}}, "is not an integer from 0 to"},
           {{{"tail", "5"}}, "tail: unknown query parameter"}}) {
    HttpResponse r = Serve("GET", "/api/v1/jobs/1/events", query);
    EXPECT_EQ(r.status, 400) << says;
    EXPECT_THAT(r.body, HasSubstr(says));
  }

  // Events of 1 MiB each (a message is not bounded by the store): four reach the byte bound.
  std::vector<JobEvent> large(6, JobEvent{1, clock_.Now(), "placed", std::string(1 << 20, 'x')});
  ASSERT_TRUE(disk_.SaveJob(**job, large).ok());
  Json big = Get("/api/v1/jobs/1/events", {{"after", std::to_string(more + 1)}});
  EXPECT_EQ(big["events"].size(), 4u);
  EXPECT_EQ(big["next"], more + 5);
  EXPECT_EQ(Get("/api/v1/jobs/1/events", {{"after", big["next"].dump()}})["events"].size(), 2u);
}

TEST_F(ListRoutes, ParametersTheListDoesNotTakeAreRefused) {
  HttpResponse r = Serve("GET", "/api/v1/jobs", {{"limt", "5"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("limt: unknown query parameter"));
  r = Serve("GET", "/api/v1/jobs", {{"before", "3"}, {"after", "1"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("before, after: give one of them"));
}

}  // namespace
}  // namespace cohort::api
