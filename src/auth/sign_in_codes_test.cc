#include "auth/sign_in_codes.h"

#include <gtest/gtest.h>

#include "auth/token.h"

namespace cohort::auth {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

class SignInCodesTest : public ::testing::Test {
 protected:
  ManualClock clock_;
  SignInCodes codes_{SignInCodeLimits{minutes(2), 3, 5}};
};

TEST_F(SignInCodesTest, ACodeNamesItsUserOnceAndIsShapedLikeASecret) {
  auto issued = codes_.Issue("ada", clock_.Now());
  ASSERT_TRUE(issued.ok()) << issued.status().ToString();
  EXPECT_TRUE(issued->code.starts_with("cohc_"));
  EXPECT_TRUE(SecretId(issued->code, kSignInCodePrefix).has_value());
  EXPECT_EQ(issued->expires_at, clock_.Now() + minutes(2));
  auto user = codes_.Redeem(issued->code, clock_.Now());
  ASSERT_TRUE(user.ok()) << user.status().ToString();
  EXPECT_EQ(*user, "ada");
  auto again = codes_.Redeem(issued->code, clock_.Now());
  ASSERT_EQ(again.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(again.status().message().find("used already"), std::string::npos)
      << again.status().message();
  EXPECT_EQ(again.status().message().find(issued->code), std::string::npos);
}

TEST_F(SignInCodesTest, AnExpiredCodeIsRefusedSayingSo) {
  auto issued = codes_.Issue("ada", clock_.Now());
  ASSERT_TRUE(issued.ok());
  clock_.Advance(minutes(2) - seconds(1));
  auto other = codes_.Issue("ada", clock_.Now());
  ASSERT_TRUE(other.ok());
  clock_.Advance(seconds(1));
  auto user = codes_.Redeem(issued->code, clock_.Now());
  ASSERT_EQ(user.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(user.status().message().find("expired"), std::string::npos);
  EXPECT_NE(user.status().message().find("cohort dashboard"), std::string::npos);
  EXPECT_TRUE(codes_.Redeem(other->code, clock_.Now()).ok());
  // Long after, the code is forgotten: refused as unknown.
  clock_.Advance(SignInCodes::kRememberFor);
  ASSERT_TRUE(codes_.Issue("bob", clock_.Now()).ok());  // pruning happens on issue
  EXPECT_EQ(codes_.size(), 2u);                         // `other` (used) and bob's
  auto forgotten = codes_.Redeem(issued->code, clock_.Now());
  EXPECT_NE(forgotten.status().message().find("not valid"), std::string::npos);
}

TEST_F(SignInCodesTest, AWrongOrMalformedCodeIsRefused) {
  auto issued = codes_.Issue("ada", clock_.Now());
  ASSERT_TRUE(issued.ok());
  std::string wrong = issued->code;
  wrong.back() = wrong.back() == 'A' ? 'B' : 'A';
  for (std::string_view code : {std::string_view(wrong), std::string_view("cohc_x"),
                                std::string_view(""), std::string_view("coh_123")}) {
    auto user = codes_.Redeem(code, clock_.Now());
    EXPECT_EQ(user.status().code(), StatusCode::kUnauthenticated) << code;
  }
  // A guess does not use the real code up.
  EXPECT_TRUE(codes_.Redeem(issued->code, clock_.Now()).ok());
}

TEST_F(SignInCodesTest, UnusedCodesAreCappedPerUserAndInTotal) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(codes_.Issue("ada", clock_.Now()).ok());
  auto fourth = codes_.Issue("ada", clock_.Now());
  ASSERT_EQ(fourth.status().code(), StatusCode::kTooManyRequests);
  EXPECT_NE(fourth.status().message().find("ada already holds 3"), std::string::npos);
  ASSERT_TRUE(codes_.Issue("bob", clock_.Now()).ok());
  ASSERT_TRUE(codes_.Issue("bob", clock_.Now()).ok());
  auto sixth = codes_.Issue("cyd", clock_.Now());
  ASSERT_EQ(sixth.status().code(), StatusCode::kTooManyRequests);
  EXPECT_NE(sixth.status().message().find("master holds 5"), std::string::npos);
  // Once they expire, there is room again.
  clock_.Advance(minutes(2));
  EXPECT_TRUE(codes_.Issue("ada", clock_.Now()).ok());
  EXPECT_TRUE(codes_.Issue("cyd", clock_.Now()).ok());
}

TEST_F(SignInCodesTest, AUsedCodeMakesRoomAndRememberedOnesAreBounded) {
  for (int i = 0; i < 20; ++i) {
    auto issued = codes_.Issue("ada", clock_.Now());
    ASSERT_TRUE(issued.ok()) << i << ": " << issued.status().ToString();
    ASSERT_TRUE(codes_.Redeem(issued->code, clock_.Now()).ok());
  }
  // Used codes are remembered, but no more than `total` of them (pruned before each issue: the
  // last one is the sixth).
  EXPECT_EQ(codes_.size(), 6u);
}

}  // namespace
}  // namespace cohort::auth
