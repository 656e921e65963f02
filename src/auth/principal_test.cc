#include "auth/principal.h"

#include <gtest/gtest.h>

namespace cohort::auth {
namespace {

Principal UserIn(std::map<std::string, TeamRole> teams, bool admin = false) {
  User u;
  u.name = "ada";
  u.admin = admin;
  u.teams = std::move(teams);
  return Principal::ForUser(u, "t1");
}

TEST(Principal, MembersSubmitToTheirTeamsOnly) {
  EXPECT_TRUE(CanSubmitTo(UserIn({{"vision", TeamRole::kMember}}), "vision"));
  EXPECT_TRUE(CanSubmitTo(UserIn({{"vision", TeamRole::kAdmin}}), "vision"));
  EXPECT_FALSE(CanSubmitTo(UserIn({{"vision", TeamRole::kViewer}}), "vision"));
  EXPECT_FALSE(CanSubmitTo(UserIn({{"vision", TeamRole::kMember}}), "nlp"));
  EXPECT_TRUE(CanSubmitTo(UserIn({}, /*admin=*/true), "nlp"));
}

TEST(Principal, OwnersAndTeamAdminsChangeJobs) {
  auto member = UserIn({{"vision", TeamRole::kMember}});
  EXPECT_TRUE(CanChangeJob(member, "ada", "vision"));
  EXPECT_FALSE(CanChangeJob(member, "bob", "vision"));
  EXPECT_TRUE(CanReadJob(member, "bob", "vision"));
  EXPECT_FALSE(CanReadJob(member, "bob", "nlp"));
  auto team_admin = UserIn({{"vision", TeamRole::kAdmin}});
  EXPECT_TRUE(CanChangeJob(team_admin, "bob", "vision"));
  EXPECT_FALSE(CanChangeJob(team_admin, "bob", "nlp"));
  EXPECT_TRUE(CanManageMembers(team_admin, "vision"));
  EXPECT_FALSE(CanManageMembers(member, "vision"));
  EXPECT_TRUE(CanManageTeamSecrets(team_admin, "vision"));
  EXPECT_FALSE(CanManageTeamSecrets(team_admin, "nlp"));
  EXPECT_FALSE(CanManageTeamSecrets(member, "vision"));
  auto viewer = UserIn({{"vision", TeamRole::kViewer}});
  EXPECT_TRUE(CanReadJob(viewer, "bob", "vision"));
  EXPECT_FALSE(CanChangeJob(viewer, "bob", "vision"));
}

TEST(Principal, NodesAndTheJoinTokenActForNoUser) {
  Principal node;
  node.kind = CallerKind::kNode;
  node.name = "ada";  // a node named like a user gets nothing of the user's
  node.admin = true;  // and no admin right, whatever the record says
  EXPECT_FALSE(IsAdmin(node));
  EXPECT_FALSE(CanSubmitTo(node, "default"));
  EXPECT_FALSE(CanReadJob(node, "ada", "default"));
  EXPECT_FALSE(CanChangeJob(node, "ada", "default"));
  EXPECT_FALSE(CanManageMembers(node, "default"));
  EXPECT_FALSE(CanManageTeamSecrets(node, "default"));
  EXPECT_EQ(node.Describe(), "node ada");
  EXPECT_EQ(Principal{}.Describe(), "an anonymous caller");
}

}  // namespace
}  // namespace cohort::auth
