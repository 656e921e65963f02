#include "auth/token.h"

#include <gtest/gtest.h>

#include <set>

namespace cohort::auth {
namespace {

TEST(Token, AMintedTokenHasItsIdAndMatchesItsHashOnly) {
  auto minted = MintToken();
  ASSERT_TRUE(minted.ok()) << minted.status().ToString();
  EXPECT_EQ(minted->token.size(), kTokenLength);
  auto id = TokenId(minted->token);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, minted->id);
  EXPECT_EQ(minted->hash, HashToken(minted->token));
  EXPECT_EQ(minted->hash.size(), 64u);
  EXPECT_TRUE(TokenMatches(minted->token, minted->hash));
  std::string other = minted->token;
  other.back() = other.back() == 'A' ? 'B' : 'A';
  EXPECT_FALSE(TokenMatches(other, minted->hash));
  EXPECT_FALSE(TokenMatches(minted->token, ""));
  EXPECT_FALSE(TokenMatches(minted->token, minted->hash.substr(1)));
  EXPECT_EQ(minted->token.find(minted->hash), std::string::npos);
}

TEST(Token, MintedTokensDiffer) {
  std::set<std::string> ids, tokens;
  for (int i = 0; i < 1000; ++i) {
    auto minted = MintToken();
    ASSERT_TRUE(minted.ok());
    ids.insert(minted->id);
    tokens.insert(minted->token);
  }
  EXPECT_EQ(ids.size(), 1000u);
  EXPECT_EQ(tokens.size(), 1000u);
}

TEST(Token, HashIsSha256) {
  EXPECT_EQ(HashToken("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Token, MalformedTokensSayWhatIsWrongWithoutQuotingThem) {
  std::string good = "coh_0123456789abcdef_" + std::string(kTokenSecretLength, 'x');
  ASSERT_TRUE(TokenId(good).ok()) << TokenId(good).status().ToString();
  struct Case {
    std::string token;
    std::string why;
  } cases[] = {
      {"", "does not start with coh_"},
      {"ghp_" + good.substr(4), "does not start with coh_"},
      {good.substr(0, good.size() - 1), "has 63 characters, not 64"},
      {good + "y", "has 65 characters"},
      {"coh_0123456789ABCDEF_" + std::string(kTokenSecretLength, 'x'), "not lowercase hex"},
      {"coh_0123456789abcdef-" + std::string(kTokenSecretLength, 'x'), "no '_' after its id"},
      {"coh_0123456789abcdef_" + std::string(kTokenSecretLength - 1, 'x') + "=", "not base64url"},
      {"coh_0123456789abcdef_" + std::string(kTokenSecretLength - 1, 'x') + "\n", "not base64url"},
  };
  for (const auto& c : cases) {
    auto id = TokenId(c.token);
    ASSERT_FALSE(id.ok()) << c.token;
    EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(id.status().message().find(c.why), std::string::npos) << id.status().ToString();
    if (c.token.size() > 8) {
      EXPECT_EQ(id.status().message().find(c.token), std::string::npos) << id.status().ToString();
    }
  }
}

TEST(Token, BearerHeaders) {
  EXPECT_EQ(*BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(*BearerToken("bearer   abc  "), "abc");
  EXPECT_EQ(*BearerToken("BEARER abc"), "abc");
  for (std::string_view bad :
       {"", "Bearer", "Bearer ", "Bearer    ", "Basic YWRhOnB3", "Bearerabc", "Token abc"}) {
    auto t = BearerToken(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.status().message().find("Authorization"), std::string::npos);
  }
}

}  // namespace
}  // namespace cohort::auth
