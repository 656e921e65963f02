// What a user's tokens may cost the master: a bound on valid ones, and old dead ones pruned;
// and the default team an admin sets for a user's jobs.
#include "master/accounts.h"

#include <gtest/gtest.h>

#include "testing/failing_state_store.h"
#include "testing/memory_state_store.h"

namespace cohort::master {
namespace {

class AccountsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"ada", "bob"}) {
      User user;
      user.name = name;
      ASSERT_TRUE(accounts_.CreateUser(user).ok());
    }
  }

  size_t StoredTokens(const std::string& subject) {
    auto tokens = store_.LoadTokens();
    EXPECT_TRUE(tokens.ok());
    size_t n = 0;
    for (const auto& t : *tokens) n += t.subject == subject;
    return n;
  }

  testing::FailingStateStore store_{std::make_unique<testing::MemoryStateStore>()};
  ManualClock clock_;
  Accounts accounts_{store_, clock_};
};

TEST_F(AccountsTest, AUserHoldsAtMostTheBoundOfValidTokensAndRevokingMakesRoom) {
  std::vector<std::string> ids;
  for (size_t i = 0; i < kMaxValidTokensPerUser; ++i) {
    auto issued = accounts_.Issue(TokenKind::kUser, "ada", "t");
    ASSERT_TRUE(issued.ok()) << i << ": " << issued.status().ToString();
    ids.push_back(issued->record.id);
  }
  auto refused = accounts_.Issue(TokenKind::kUser, "ada", "one more");
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(),
            "user ada already holds 100 valid tokens, the most a user may: revoke unused ones "
            "with `cohort token revoke ID` (`cohort token list` shows them)");
  EXPECT_TRUE(accounts_.Issue(TokenKind::kUser, "bob", "t").ok()) << "the bound is per user";

  ASSERT_TRUE(accounts_.Revoke(ids[0]).ok());
  EXPECT_TRUE(accounts_.Issue(TokenKind::kUser, "ada", "t").ok());
  EXPECT_FALSE(accounts_.Issue(TokenKind::kUser, "ada", "t").ok());
}

TEST_F(AccountsTest, ExpiredTokensDoNotCountTowardsTheBound) {
  for (size_t i = 0; i < kMaxValidTokensPerUser; ++i) {
    ASSERT_TRUE(accounts_.Issue(TokenKind::kUser, "ada", "t", std::chrono::hours(1)).ok());
  }
  EXPECT_FALSE(accounts_.Issue(TokenKind::kUser, "ada", "t").ok());
  clock_.Advance(std::chrono::hours(1));
  EXPECT_TRUE(accounts_.Issue(TokenKind::kUser, "ada", "t").ok());
}

TEST_F(AccountsTest, OnlyTheNewestDeadTokensAreKeptInMemoryAndInTheStore) {
  // A loop of create and revoke: without pruning, every turn would add a row for good.
  std::string first, last;
  for (size_t i = 0; i < kKeptDeadTokensPerSubject + 50; ++i) {
    auto issued = accounts_.Issue(TokenKind::kUser, "ada", "t");
    ASSERT_TRUE(issued.ok()) << i << ": " << issued.status().ToString();
    if (i == 0) first = issued->record.id;
    last = issued->record.id;
    ASSERT_TRUE(accounts_.Revoke(last).ok());
    clock_.Advance(std::chrono::seconds(1));
  }
  ASSERT_TRUE(accounts_.Issue(TokenKind::kUser, "ada", "live").ok());
  EXPECT_EQ(StoredTokens("ada"), kKeptDeadTokensPerSubject + 1);
  EXPECT_EQ(accounts_.FindToken(first), nullptr) << "the oldest went";
  ASSERT_NE(accounts_.FindToken(last), nullptr) << "the newest stay, for lists and the audit";
  EXPECT_TRUE(accounts_.FindToken(last)->revoked_at.has_value());

  // A node that rejoins over and over leaves one dead credential a time: pruned the same way.
  for (size_t i = 0; i < kKeptDeadTokensPerSubject + 5; ++i) {
    ASSERT_TRUE(accounts_.RevokeAll(TokenKind::kNode, "node-1").ok());
    ASSERT_TRUE(accounts_.Issue(TokenKind::kNode, "node-1", "agent credential").ok());
  }
  EXPECT_EQ(StoredTokens("node-1"), kKeptDeadTokensPerSubject + 1);
}

TEST_F(AccountsTest, APruneThatCannotDeleteIssuesNothing) {
  for (size_t i = 0; i <= kKeptDeadTokensPerSubject; ++i) {
    auto issued = accounts_.Issue(TokenKind::kUser, "ada", "t");
    ASSERT_TRUE(issued.ok());
    ASSERT_TRUE(accounts_.Revoke(issued->record.id).ok());
  }
  store_.FailWrites(true, {testing::FailingStateStore::Call::kDeleteToken});
  auto refused = accounts_.Issue(TokenKind::kUser, "ada", "t");
  EXPECT_EQ(refused.status().code(), StatusCode::kInternal) << refused.status().ToString();
  EXPECT_EQ(accounts_.ListTokens().size(), kKeptDeadTokensPerSubject + 1);
  EXPECT_EQ(StoredTokens("ada"), kKeptDeadTokensPerSubject + 1);
  store_.FailWrites(false);
  EXPECT_TRUE(accounts_.Issue(TokenKind::kUser, "ada", "t").ok());
  EXPECT_EQ(StoredTokens("ada"), kKeptDeadTokensPerSubject + 1);
}

TEST_F(AccountsTest, ADefaultTeamMustBeOneTheUserMaySubmitTo) {
  ASSERT_TRUE(accounts_.SetTeamRole("ada", "vision", TeamRole::kMember).ok());
  ASSERT_TRUE(accounts_.SetTeamRole("ada", "nlp", TeamRole::kViewer).ok());
  UserChange to_nlp;
  to_nlp.default_team = std::optional<std::string>("nlp");
  auto refused = accounts_.UpdateUser("ada", to_nlp);
  ASSERT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("cohort team add-member nlp ada"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(accounts_.FindUser("ada")->default_team, std::nullopt);

  UserChange to_vision;
  to_vision.default_team = std::optional<std::string>("vision");
  ASSERT_TRUE(accounts_.UpdateUser("ada", to_vision).ok());
  EXPECT_EQ(accounts_.FindUser("ada")->default_team, std::optional<std::string>("vision"));
  // Durable: a master that loads the store again has it.
  Accounts reloaded{store_, clock_};
  ASSERT_TRUE(reloaded.Load().ok());
  EXPECT_EQ(reloaded.FindUser("ada")->default_team, std::optional<std::string>("vision"));
}

TEST_F(AccountsTest, LeavingTheDefaultTeamClearsIt) {
  ASSERT_TRUE(accounts_.SetTeamRole("ada", "vision", TeamRole::kMember).ok());
  UserChange to_vision;
  to_vision.default_team = std::optional<std::string>("vision");
  ASSERT_TRUE(accounts_.UpdateUser("ada", to_vision).ok());
  ASSERT_TRUE(accounts_.SetTeamRole("ada", "vision", TeamRole::kViewer).ok());
  EXPECT_EQ(accounts_.FindUser("ada")->default_team, std::nullopt);
}

}  // namespace
}  // namespace cohort::master
