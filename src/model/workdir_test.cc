#include "model/workdir.h"

#include <gtest/gtest.h>

#include <string>

namespace cohort {
namespace {

const std::string kDotDot =
    "must not contain a '..' component: a relative workdir stays within its directory; write an "
    "absolute path to run elsewhere";

TEST(Workdir, ADotDotComponentIsAProblemAnywhere) {
  EXPECT_EQ(WorkdirProblem("../../../.."), kDotDot);
  EXPECT_EQ(WorkdirProblem("data/../../etc"), kDotDot);
  EXPECT_EQ(WorkdirProblem("data/.."), kDotDot);
  EXPECT_EQ(WorkdirProblem("/srv/../etc"), kDotDot);
  EXPECT_EQ(WorkdirProblem(std::string("a\0b", 3)), "must not contain a NUL character");
  EXPECT_EQ(WorkdirProblem(std::string(4097, 'a')), "must be at most 4096 characters, got 4097");
  for (const char* ok :
       {"", ".", "data", "data/run", "/", "/srv/job", "..data", "a/..b/c", "./x"}) {
    EXPECT_EQ(WorkdirProblem(ok), std::nullopt) << ok;
  }
}

TEST(Workdir, RelativeIsBelowTheTaskDirectory) {
  EXPECT_EQ(ResolveWorkdir("/var/lib/cohort/tasks/1.1.w.0/work", ""),
            "/var/lib/cohort/tasks/1.1.w.0/work");
  EXPECT_EQ(ResolveWorkdir("/t/work", "data/run"), "/t/work/data/run");
  EXPECT_EQ(ResolveWorkdir("/t/work", "/srv/job"), "/srv/job");
}

}  // namespace
}  // namespace cohort
