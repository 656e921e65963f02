#include "auth/job_credential.h"

#include <gtest/gtest.h>

namespace cohort::auth {
namespace {

TEST(JobCredential, OneAttemptOfOneJobUnderOneKey) {
  auto key = MintJobCredentialKey();
  ASSERT_TRUE(key.ok());
  ASSERT_EQ(key->size(), kJobCredentialKeyBytes);
  std::string credential = JobCredential(*key, 7, 1);
  EXPECT_EQ(credential.size(), 64u);
  EXPECT_EQ(credential.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(JobCredential(*key, 7, 1), credential) << "the same every time it is built";
  EXPECT_NE(JobCredential(*key, 7, 2), credential) << "a new attempt, a new credential";
  EXPECT_NE(JobCredential(*key, 8, 1), credential);
  EXPECT_NE(JobCredential(*key, 71, 1), JobCredential(*key, 7, 11));
  auto other = MintJobCredentialKey();
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *key);
  EXPECT_NE(JobCredential(*other, 7, 1), credential);
}

TEST(JobCredential, ItMatchesOnlyItself) {
  std::string key(kJobCredentialKeyBytes, 'k');
  std::string credential = JobCredential(key, 7, 1);
  // HMAC-SHA256, as `printf 'cohort job credential\n7\n1' | openssl dgst -sha256 -hmac
  // kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk` computes it.
  EXPECT_EQ(credential, "d24e43f411a230b8c9bf18c6d1ad56700bc37e9bfda7ad7eab60f72d9999d2c1");
  EXPECT_TRUE(CredentialMatches(credential, credential));
  EXPECT_FALSE(CredentialMatches(credential.substr(0, 63), credential));
  EXPECT_FALSE(CredentialMatches("", credential));
  std::string flipped = credential;
  flipped[63] = flipped[63] == '0' ? '1' : '0';
  EXPECT_FALSE(CredentialMatches(flipped, credential));
}

}  // namespace
}  // namespace cohort::auth
