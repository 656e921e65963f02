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

}  // namespace
}  // namespace cohort
