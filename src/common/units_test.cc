#include "common/units.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace cohort {
namespace {

TEST(ByteSize, ParsesBinaryDecimalAndPlain) {
  EXPECT_EQ(*ParseByteSize("512Mi"), 512LL * 1024 * 1024);
  EXPECT_EQ(*ParseByteSize("32Gi"), 32LL * 1024 * 1024 * 1024);
  EXPECT_EQ(*ParseByteSize("1G"), 1000LL * 1000 * 1000);
  EXPECT_EQ(*ParseByteSize("1.5Gi"), 1536LL * 1024 * 1024);
  EXPECT_EQ(*ParseByteSize("4096"), 4096);
}

TEST(ByteSize, RejectsWithExample) {
  auto r = ParseByteSize("32GB");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "\"32GB\" is not a size; use e.g. 32Gi");
  EXPECT_FALSE(ParseByteSize("").ok());
  EXPECT_FALSE(ParseByteSize("-1Gi").ok());
  EXPECT_FALSE(ParseByteSize("Gi").ok());
  EXPECT_FALSE(ParseByteSize("0.5").ok());  // half a byte
}

TEST(ByteSize, FormatsShortestExactForm) {
  EXPECT_EQ(FormatByteSize(32LL * 1024 * 1024 * 1024), "32Gi");
  EXPECT_EQ(FormatByteSize(1536LL * 1024 * 1024), "1536Mi");
  EXPECT_EQ(FormatByteSize(1000), "1000");
  EXPECT_EQ(FormatByteSize(0), "0");
}

TEST(ByteSize, FormatsApproximatelyForPeople) {
  EXPECT_EQ(FormatByteSizeApprox(25273950208), "23.5Gi");
  EXPECT_EQ(FormatByteSizeApprox(32LL << 30), "32Gi");
  EXPECT_EQ(FormatByteSizeApprox(512), "512");
}

TEST(MilliCpus, FromJsonNumbersRefusingWhatWouldOverflow) {
  EXPECT_EQ(MilliCpusFromNumber(8), 8000);
  EXPECT_EQ(MilliCpusFromNumber(0.25), 250);
  EXPECT_EQ(MilliCpusFromNumber(-2), -2000);  // a value; whether it is allowed is the caller's
  EXPECT_EQ(MilliCpusFromNumber(1e12), int64_t{1'000'000'000'000'000});
  EXPECT_EQ(MilliCpusFromNumber(1e300), std::nullopt);
  EXPECT_EQ(MilliCpusFromNumber(-1e300), std::nullopt);
  EXPECT_EQ(MilliCpusFromNumber(std::numeric_limits<double>::infinity()), std::nullopt);
  EXPECT_EQ(MilliCpusFromNumber(std::numeric_limits<double>::quiet_NaN()), std::nullopt);
}

TEST(MilliCpus, ParsesWholeFractionAndMilli) {
  EXPECT_EQ(*ParseMilliCpus("4"), 4000);
  EXPECT_EQ(*ParseMilliCpus("0.5"), 500);
  EXPECT_EQ(*ParseMilliCpus("250m"), 250);
  EXPECT_FALSE(ParseMilliCpus("two").ok());
  EXPECT_FALSE(ParseMilliCpus("0.0005").ok());
  EXPECT_FALSE(ParseMilliCpus("64.9005").ok());
  EXPECT_FALSE(ParseMilliCpus("0.0000001").ok()) << "not rounded to 0";
  // Decimals that binary doubles cannot hold exactly are still whole thousandths.
  EXPECT_EQ(*ParseMilliCpus("64.9"), 64900);
  EXPECT_EQ(*ParseMilliCpus("0.001"), 1);
  for (int64_t milli = 0; milli < 200'000; milli += 100) {
    ASSERT_EQ(*ParseMilliCpus(FormatMilliCpus(milli)), milli) << FormatMilliCpus(milli);
  }
  EXPECT_EQ(FormatMilliCpus(4000), "4");
  EXPECT_EQ(FormatMilliCpus(500), "0.5");
  EXPECT_EQ(FormatMilliCpus(250), "250m");
}

TEST(Duration, ParsesCompoundUnits) {
  EXPECT_EQ(*ParseDuration("90m"), std::chrono::minutes(90));
  EXPECT_EQ(*ParseDuration("2h"), std::chrono::hours(2));
  EXPECT_EQ(*ParseDuration("1h30m"), std::chrono::minutes(90));
  EXPECT_EQ(*ParseDuration("500ms"), std::chrono::milliseconds(500));
  EXPECT_EQ(*ParseDuration("1d"), std::chrono::hours(24));
  EXPECT_EQ(*ParseDuration("1.5s"), std::chrono::milliseconds(1500));
  EXPECT_EQ(*ParseDuration("1s250us"), std::chrono::microseconds(1'000'250));
}

TEST(Duration, ParsesToTheNearestMicrosecond) {
  // As doubles these are a hair under the whole number; truncating would lose a microsecond.
  EXPECT_EQ(*ParseDuration("1.001ms"), std::chrono::microseconds(1001));
  EXPECT_EQ(*ParseDuration("0.000123s"), std::chrono::microseconds(123));
  EXPECT_EQ(*ParseDuration("59.999999s"), std::chrono::microseconds(59'999'999));
}

TEST(Duration, RejectsUnknownUnitsAndBareNumbers) {
  for (const char* bad : {"", "90", "5 minutes", "2w", "h", "1h-5m"}) {
    auto r = ParseDuration(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("not a duration"), std::string::npos);
    }
  }
}

TEST(TimeSpec, TakesDatesRfc3339TimesAndHowLongAgo) {
  Timestamp now = *ParseTimestamp("2026-11-22T10:00:00Z");
  auto at = [&](const char* text) {
    auto t = ParseTimeSpec(text, now);
    EXPECT_TRUE(t.ok()) << text << ": " << t.status().ToString();
    return t.ok() ? FormatTimestamp(*t) : std::string();
  };
  EXPECT_EQ(at("2026-11-01"), "2026-11-01T00:00:00.000000Z");
  EXPECT_EQ(at("2026-11-01T08:30:00Z"), "2026-11-01T08:30:00.000000Z");
  EXPECT_EQ(at("2026-11-01T08:30:00.25Z"), "2026-11-01T08:30:00.250000Z");
  EXPECT_EQ(at("2026-11-01T10:30:00+02:00"), "2026-11-01T08:30:00.000000Z");
  EXPECT_EQ(at("2026-11-01T03:30:00-05:00"), "2026-11-01T08:30:00.000000Z");
  EXPECT_EQ(at("7d"), "2026-11-15T10:00:00.000000Z");
  EXPECT_EQ(at("36h ago"), "2026-11-20T22:00:00.000000Z");
  EXPECT_EQ(at("1h30m"), "2026-11-22T08:30:00.000000Z");
  EXPECT_EQ(at("now"), "2026-11-22T10:00:00.000000Z");
  EXPECT_EQ(at("1000000d"), "1970-01-01T00:00:00.000000Z");  // never before the epoch
}

TEST(TimeSpec, RefusesWithTheFormsItTakes) {
  Timestamp now = *ParseTimestamp("2026-11-22T10:00:00Z");
  for (const char* bad : {"", "yesterday", "7", "7w", "2026-13-01", "2026-11-01T08:00:00",
                          "2026-11-01T08:00:00+2:00", "2026-11-01 08:00", "-7d", "11/01/2026"}) {
    auto t = ParseTimeSpec(bad, now);
    EXPECT_FALSE(t.ok()) << bad;
    if (!t.ok()) {
      EXPECT_NE(t.status().message().find("is not a time; use a date (2026-11-01)"),
                std::string::npos)
          << t.status().message();
    }
  }
}

// Found by fuzz/small_parsers_fuzzer.cc: std::stod threw std::out_of_range on these.
TEST(Units, NumbersBeyondADoubleAreErrorsNotExceptions) {
  const std::string huge(400, '9');
  const std::string tiny = "0." + std::string(400, '0') + "1";
  EXPECT_FALSE(ParseByteSize(huge).ok());
  EXPECT_FALSE(ParseByteSize(huge + "Gi").ok());
  EXPECT_FALSE(ParseByteSize(tiny).ok());
  EXPECT_FALSE(ParseMilliCpus(huge).ok());
  EXPECT_FALSE(ParseMilliCpus(tiny).ok());
  EXPECT_FALSE(ParseDuration(huge + "s").ok());
  EXPECT_EQ(*ParseByteSize(std::string(300, '0') + "1Ki"), 1024);  // long but small is fine
}

// Found by fuzz/small_parsers_fuzzer.cc: every part was within bounds, but their sum overflowed
// int64_t (undefined behaviour) and came out negative.
TEST(Duration, TheSumOfThePartsIsBounded) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "1157407d";
  auto r = ParseDuration(text);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("too long"), std::string::npos);
  EXPECT_EQ(*ParseDuration("1000d1000d"), std::chrono::hours(48'000));
}

TEST(Duration, FormatsForPeople) {
  EXPECT_EQ(FormatDuration(std::chrono::minutes(90)), "1h30m");
  EXPECT_EQ(FormatDuration(std::chrono::seconds(45)), "45s");
  EXPECT_EQ(FormatDuration(std::chrono::milliseconds(250)), "250ms");
  EXPECT_EQ(FormatDuration(std::chrono::hours(2)), "2h");
}

}  // namespace
}  // namespace cohort
