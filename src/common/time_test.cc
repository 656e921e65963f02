#include "common/time.h"

#include <gtest/gtest.h>

namespace cohort {
namespace {

TEST(Timestamp, FormatsAndParsesRoundTrip) {
  Timestamp t = FromMicros(1'763'769'845'123'456);
  std::string text = FormatTimestamp(t);
  EXPECT_EQ(text, "2025-11-22T00:04:05.123456Z");
  auto back = ParseTimestamp(text);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, t);
}

TEST(Timestamp, RejectsNonUtc) {
  EXPECT_FALSE(ParseTimestamp("2025-11-21T23:57:25+01:00").ok());
  EXPECT_FALSE(ParseTimestamp("yesterday").ok());
  EXPECT_FALSE(ParseTimestamp("2025-1-21T23:57:25Z").ok());   // fields have fixed widths
  EXPECT_FALSE(ParseTimestamp("2025-13-21T23:57:25Z").ok());  // no month 13
  EXPECT_FALSE(ParseTimestamp("2025-11-21T23:57:+5Z").ok());  // no signs
  EXPECT_FALSE(ParseTimestamp("2025-11-21T23:57:25").ok());   // not UTC
  EXPECT_TRUE(ParseTimestamp("2025-11-21T23:57:25Z").ok());
}

TEST(ManualClock, MovesOnlyWhenTold) {
  ManualClock clock(FromMicros(1000));
  EXPECT_EQ(ToMicros(clock.Now()), 1000);
  clock.Advance(std::chrono::milliseconds(5));
  EXPECT_EQ(ToMicros(clock.Now()), 6000);
}

}  // namespace
}  // namespace cohort
