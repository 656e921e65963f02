#include "api/cookies.h"

#include <gtest/gtest.h>

namespace cohort::api {
namespace {

TEST(Cookies, FindsOneCookieAmongOthers) {
  EXPECT_EQ(CookieValue("a=1; cohort_notebook=s3cret; b=2", "cohort_notebook"), "s3cret");
  EXPECT_EQ(CookieValue("cohort_notebook=\"quoted\"", "cohort_notebook"), "quoted");
  EXPECT_EQ(CookieValue("a=1;b=2", "b"), "2");
  EXPECT_EQ(CookieValue("a=1; b", "b"), "");
  EXPECT_EQ(CookieValue("a=1; b=2", "c"), std::nullopt);
  EXPECT_EQ(CookieValue("xcohort_notebook=1", "cohort_notebook"), std::nullopt)
      << "a name that merely ends like it is another cookie";
  EXPECT_EQ(CookieValue("", "a"), std::nullopt);
  EXPECT_EQ(CookieValue("a=1; a=2", "a"), "1") << "the first of two, as browsers send the "
                                                  "most specific path first";
}

TEST(Cookies, LeavesOutOneCookieAndKeepsTheRest) {
  EXPECT_EQ(
      WithoutCookie("_xsrf=2|abc; cohort_notebook=s3cret; username-x=\"y\"", "cohort_notebook"),
      "_xsrf=2|abc; username-x=\"y\"");
  EXPECT_EQ(WithoutCookie("cohort_notebook=1; cohort_notebook=2", "cohort_notebook"), "");
  EXPECT_EQ(WithoutCookie("  a=1 ;b=2  ", "c"), "a=1; b=2");
}

}  // namespace
}  // namespace cohort::api
