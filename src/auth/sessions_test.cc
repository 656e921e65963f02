#include "auth/sessions.h"

#include <gtest/gtest.h>

#include "auth/token.h"

namespace cohort::auth {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

class SessionsTest : public ::testing::Test {
 protected:
  ManualClock clock_;
  Sessions sessions_{SessionLimits{hours(12), 2, 3}};
};

TEST_F(SessionsTest, ASessionAuthenticatesAsItsUserUntilItExpires) {
  auto opened = sessions_.Open("ada", clock_.Now());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_TRUE(opened->secret.starts_with("cohs_"));
  EXPECT_EQ(SecretId(opened->secret, kSessionPrefix), opened->session.id);
  auto s = sessions_.Authenticate(opened->secret, clock_.Now());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->user, "ada");
  EXPECT_EQ(s->expires_at, clock_.Now() + hours(12));
  clock_.Advance(hours(12) - seconds(1));
  EXPECT_TRUE(sessions_.Authenticate(opened->secret, clock_.Now()).ok());
  clock_.Advance(seconds(1));
  auto expired = sessions_.Authenticate(opened->secret, clock_.Now());
  ASSERT_EQ(expired.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(expired.status().message().find("expired"), std::string::npos);
  EXPECT_EQ(expired.status().message().find(opened->secret), std::string::npos);
}

TEST_F(SessionsTest, ARevokedSessionIsRefusedSayingItWasSignedOut) {
  auto opened = sessions_.Open("ada", clock_.Now());
  auto other = sessions_.Open("ada", clock_.Now());
  ASSERT_TRUE(opened.ok() && other.ok());
  ASSERT_TRUE(sessions_.Revoke(opened->session.id, clock_.Now()).ok());
  ASSERT_TRUE(sessions_.Revoke(opened->session.id, clock_.Now()).ok());  // twice is fine
  auto s = sessions_.Authenticate(opened->secret, clock_.Now());
  ASSERT_EQ(s.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(s.status().message().find("signed out"), std::string::npos);
  EXPECT_TRUE(sessions_.Authenticate(other->secret, clock_.Now()).ok());
  EXPECT_EQ(sessions_.Revoke("0123456789abcdef", clock_.Now()).code(), StatusCode::kNotFound);
}

TEST_F(SessionsTest, AWrongSecretOrAnAPITokenIsNotASession) {
  auto opened = sessions_.Open("ada", clock_.Now());
  ASSERT_TRUE(opened.ok());
  std::string wrong = opened->secret;
  wrong.back() = wrong.back() == 'A' ? 'B' : 'A';
  auto token = MintToken();
  ASSERT_TRUE(token.ok());
  for (const std::string& secret : {wrong, token->token, std::string("cohs_")}) {
    EXPECT_EQ(sessions_.Authenticate(secret, clock_.Now()).status().code(),
              StatusCode::kUnauthenticated);
  }
}

TEST_F(SessionsTest, RevokingAUserEndsTheirSessionsOnly) {
  auto ada = sessions_.Open("ada", clock_.Now());
  auto bob = sessions_.Open("bob", clock_.Now());
  ASSERT_TRUE(ada.ok() && bob.ok());
  sessions_.RevokeUser("ada", clock_.Now());
  EXPECT_FALSE(sessions_.Authenticate(ada->secret, clock_.Now()).ok());
  EXPECT_TRUE(sessions_.Authenticate(bob->secret, clock_.Now()).ok());
}

TEST_F(SessionsTest, OneSessionTooManyEndsTheUsersOldestAndTheTotalIsCapped) {
  auto first = sessions_.Open("ada", clock_.Now());
  clock_.Advance(seconds(1));
  auto second = sessions_.Open("ada", clock_.Now());
  clock_.Advance(seconds(1));
  auto third = sessions_.Open("ada", clock_.Now());
  ASSERT_TRUE(first.ok() && second.ok() && third.ok());
  EXPECT_FALSE(sessions_.Authenticate(first->secret, clock_.Now()).ok());
  EXPECT_TRUE(sessions_.Authenticate(second->secret, clock_.Now()).ok());
  EXPECT_TRUE(sessions_.Authenticate(third->secret, clock_.Now()).ok());
  ASSERT_TRUE(sessions_.Open("bob", clock_.Now()).ok());
  auto fourth = sessions_.Open("cyd", clock_.Now());
  ASSERT_EQ(fourth.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(fourth.status().message().find("holds 3"), std::string::npos);
  // Past their expiry and the time they are remembered, sessions are forgotten: room again.
  clock_.Advance(hours(12) + Sessions::kRememberFor);
  EXPECT_TRUE(sessions_.Open("cyd", clock_.Now()).ok());
  EXPECT_EQ(sessions_.size(), 1u);
}

}  // namespace
}  // namespace cohort::auth
