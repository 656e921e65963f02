#include "common/strings.h"

#include <gtest/gtest.h>

#include <limits>

namespace cohort {
namespace {

TEST(ParseInteger, TakesOnlyAWholeDecimalWithinBounds) {
  EXPECT_EQ(ParseInteger("42", 0, 100), 42);
  EXPECT_EQ(ParseInteger("-7", -10, 10), -7);
  EXPECT_EQ(ParseInteger("0", 0, 0), 0);
  EXPECT_EQ(ParseInteger("9223372036854775807", 0, std::numeric_limits<int64_t>::max()),
            std::numeric_limits<int64_t>::max());
  for (const char* bad :
       {"", " 1", "1 ", "+1", "1x", "0x10", "1.0", "1e3", "-", "--1", "99999999999999999999"}) {
    EXPECT_EQ(
        ParseInteger(bad, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()),
        std::nullopt)
        << bad;
  }
  EXPECT_EQ(ParseInteger("101", 0, 100), std::nullopt);
  EXPECT_EQ(ParseInteger("-1", 0, 100), std::nullopt);
}

TEST(ParseInt, DefaultsToTheRangeOfInt) {
  EXPECT_EQ(ParseInt("2147483647"), std::numeric_limits<int>::max());
  EXPECT_EQ(ParseInt("2147483648"), std::nullopt);
  EXPECT_EQ(ParseInt("-2147483648"), std::numeric_limits<int>::min());
  EXPECT_EQ(ParseInt("30000", 1024, 65535), 30000);
  EXPECT_EQ(ParseInt("80", 1024, 65535), std::nullopt);
}

TEST(ValidUtf8, KeepsUtf8AndReplacesEverythingElse) {
  EXPECT_EQ(ValidUtf8("/api/v1/jobs/12"), "/api/v1/jobs/12");
  EXPECT_EQ(ValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80");
  EXPECT_EQ(ValidUtf8("a\xff"
                      "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(ValidUtf8("\xc3"), "\xef\xbf\xbd");                                  // cut short
  EXPECT_EQ(ValidUtf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");                  // overlong '/'
  EXPECT_EQ(ValidUtf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
  EXPECT_EQ(ValidUtf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}

}  // namespace
}  // namespace cohort
