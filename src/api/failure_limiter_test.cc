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

TEST(FailureLimiter, AClientIsItsAddressNotItsPort) {
  EXPECT_EQ(ClientAddress("10.1.2.3:41000"), "10.1.2.3");
  EXPECT_EQ(ClientAddress("[::1]:41000"), "::1");
  EXPECT_EQ(ClientAddress("local"), "local");
}

}  // namespace
}  // namespace cohort::api
