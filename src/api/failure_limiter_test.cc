#include "api/failure_limiter.h"

#include <gtest/gtest.h>

namespace cohort::api {
namespace {

const Timestamp kStart = FromMicros(1'000'000'000'000);

TEST(FailureLimiter, AllowsABurstThenOneFailurePerRefill) {
  FailureLimiter limiter(FailureLimiter::Limits{3, std::chrono::seconds(1), 100});
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(limiter.Wait("a", kStart), Duration::zero()) << i;
    limiter.Failed("a", kStart);
  }
  EXPECT_EQ(limiter.Wait("a", kStart), std::chrono::seconds(1));
  EXPECT_EQ(limiter.Wait("b", kStart), Duration::zero());  // others are not held up
  EXPECT_EQ(limiter.Wait("a", kStart + std::chrono::milliseconds(400)),
            std::chrono::milliseconds(600));
  EXPECT_EQ(limiter.Wait("a", kStart + std::chrono::seconds(1)), Duration::zero());
  limiter.Failed("a", kStart + std::chrono::seconds(1));
  EXPECT_GT(limiter.Wait("a", kStart + std::chrono::seconds(1)), Duration::zero());
}

TEST(FailureLimiter, TheTableStaysBoundedWhateverTheAddresses) {
  FailureLimiter limiter(FailureLimiter::Limits{3, std::chrono::seconds(1), 50});
  for (int i = 0; i < 10'000; ++i) limiter.Failed("10.0." + std::to_string(i), kStart);
  EXPECT_LE(limiter.tracked(), 50u);
}

TEST(FailureLimiter, RefusalsAreReportedALinePerAddressPerInterval) {
  FailureLimiter limiter;  // a report every 10 s at most
  EXPECT_EQ(limiter.Report("a", kStart), 1) << "the first refusal is told at once";
  for (int i = 1; i <= 49; ++i) {
    EXPECT_EQ(limiter.Report("a", kStart + std::chrono::milliseconds(200 * i)), 0) << i;
  }
  EXPECT_EQ(limiter.Report("b", kStart + std::chrono::seconds(1)), 1) << "per address";
  EXPECT_EQ(limiter.Report("a", kStart + std::chrono::seconds(10)), 50)
      << "the 49 held since, and this one";
  EXPECT_EQ(limiter.Report("a", kStart + std::chrono::seconds(11)), 0);
}

TEST(FailureLimiter, AClientIsItsAddressNotItsPort) {
  EXPECT_EQ(ClientAddress("10.1.2.3:41000"), "10.1.2.3");
  EXPECT_EQ(ClientAddress("[::1]:41000"), "::1");
  EXPECT_EQ(ClientAddress("local"), "local");
}

}  // namespace
}  // namespace cohort::api
