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

TEST(Principal, AJobWithNoTeamGoesToTheUsersOneTeam) {
  EXPECT_EQ(TeamForJobs(UserIn({{"vision", TeamRole::kMember}}), "default").value(), "vision");
  // A viewer's team is not one they submit to.
  EXPECT_EQ(
      TeamForJobs(UserIn({{"vision", TeamRole::kAdmin}, {"nlp", TeamRole::kViewer}}), "default")
          .value(),
      "vision");
  EXPECT_EQ(TeamForJobs(UserIn({}, /*admin=*/true), "default").value(), "default");
}

TEST(Principal, TheAdminsChoiceWinsAmongSeveralTeams) {
  auto ada = UserIn({{"vision", TeamRole::kMember}, {"nlp", TeamRole::kMember}});
  auto several = TeamForJobs(ada, "default");
  ASSERT_EQ(several.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(several.status().message().find("teams nlp, vision"), std::string::npos);
  EXPECT_NE(several.status().message().find("--team"), std::string::npos);
  EXPECT_NE(several.status().message().find("cohort user set ada --default-team nlp"),
            std::string::npos);
  ada.default_team = "vision";
  EXPECT_EQ(TeamForJobs(ada, "default").value(), "vision");
}

TEST(Principal, AUserInNoTeamIsToldWhatToAskFor) {
  for (const auto& teams : {std::map<std::string, TeamRole>{},
                            std::map<std::string, TeamRole>{{"vision", TeamRole::kViewer}}}) {
    auto none = TeamForJobs(UserIn(teams), "default");
    ASSERT_EQ(none.status().code(), StatusCode::kPermissionDenied);
    EXPECT_NE(none.status().message().find("cohort team add-member TEAM ada"), std::string::npos)
        << none.status().message();
  }
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
