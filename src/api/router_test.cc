#include "api/router.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace cohort::api {
namespace {

using ::testing::ElementsAre;

TEST(MatchPath, LiteralsAndNamedSegments) {
  EXPECT_EQ(*MatchPath("/api/v1/jobs", "/api/v1/jobs"), PathParams{});
  EXPECT_EQ(*MatchPath("/api/v1/jobs", "/api/v1/jobs/"), PathParams{});  // one trailing slash
  EXPECT_EQ(*MatchPath("/api/v1/jobs/{id}/events", "/api/v1/jobs/17/events"),
            (PathParams{{"id", "17"}}));
  EXPECT_EQ(*MatchPath("/a/{node}/logs/{task}", "/a/n-1/logs/3.1.worker.0"),
            (PathParams{{"node", "n-1"}, {"task", "3.1.worker.0"}}));
  EXPECT_FALSE(MatchPath("/api/v1/jobs", "/api/v1/jobs//"));
  EXPECT_FALSE(MatchPath("/api/v1/jobs/{id}", "/api/v1/jobs/"));  // a segment is never empty
  EXPECT_FALSE(MatchPath("/api/v1/jobs/{id}", "/api/v1/jobs/1/kill"));
  EXPECT_FALSE(MatchPath("/api/v1/jobs/{id}/kill", "/api/v1/jobs/1/kil"));
  EXPECT_FALSE(MatchPath("/api/v1/jobs", "/api/v2/jobs"));
}

TEST(MatchPath, ALastSegmentWithDotsTakesTheRestOfThePath) {
  const char* pattern = "/api/v1/jobs/{id}/artifacts/{path...}";
  EXPECT_EQ(*MatchPath(pattern, "/api/v1/jobs/7/artifacts/model.pt"),
            (PathParams{{"id", "7"}, {"path", "model.pt"}}));
  EXPECT_EQ(*MatchPath(pattern, "/api/v1/jobs/7/artifacts/ckpt/step 40/w.bin"),
            (PathParams{{"id", "7"}, {"path", "ckpt/step 40/w.bin"}}));
  EXPECT_EQ(*MatchPath(pattern, "/api/v1/jobs/7/artifacts/a//../b"),
            (PathParams{{"id", "7"}, {"path", "a//../b"}}));
  EXPECT_FALSE(MatchPath(pattern, "/api/v1/jobs/7/artifacts"));
  EXPECT_FALSE(MatchPath(pattern, "/api/v1/jobs/7/artifacts/"));
  EXPECT_FALSE(MatchPath(pattern, "/api/v1/jobs/7/outputs/a"));
}

TEST(Router, PicksByMethodAndPathAndSaysWhichMethodsAPathTakes) {
  Router<std::string> router({{"GET", "/jobs", "list"},
                              {"POST", "/jobs", "submit"},
                              {"GET", "/jobs/{id}", "get"},
                              {"POST", "/jobs/{id}/kill", "kill"}});
  auto found = router.Find("POST", "/jobs");
  ASSERT_NE(found.handler, nullptr);
  EXPECT_EQ(*found.handler, "submit");
  found = router.Find("GET", "/jobs/4");
  ASSERT_NE(found.handler, nullptr);
  EXPECT_EQ(*found.handler, "get");
  EXPECT_EQ(found.params.at("id"), "4");
  EXPECT_EQ(found.pattern, "/jobs/{id}") << "the pattern, not the path: what metrics label";
  found = router.Find("DELETE", "/jobs");
  EXPECT_EQ(found.handler, nullptr);
  EXPECT_EQ(found.pattern, "");
  EXPECT_THAT(found.allowed, ElementsAre("GET", "POST"));
  found = router.Find("GET", "/jobs/4/kill");
  EXPECT_EQ(found.handler, nullptr);
  EXPECT_THAT(found.allowed, ElementsAre("POST"));
  found = router.Find("GET", "/teams");
  EXPECT_EQ(found.handler, nullptr);
  EXPECT_TRUE(found.allowed.empty());
}

TEST(Router, KeepsEachRoutesBodyLimit) {
  Router<std::string> router({{"GET", "/jobs", "list"}, {"POST", "/jobs", "submit", 0, 1 << 20}});
  EXPECT_EQ(router.Find("POST", "/jobs").body_limit, 1u << 20);
  EXPECT_EQ(router.Find("GET", "/jobs").body_limit, kSmallBodyLimit);
  EXPECT_EQ(router.Find("PUT", "/jobs").body_limit, kSmallBodyLimit) << "no route: a 405";
  EXPECT_EQ(router.Find("POST", "/nowhere").body_limit, kSmallBodyLimit);
}

}  // namespace
}  // namespace cohort::api
