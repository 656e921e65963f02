// Teams: quotas validated and written before memory changes, handed to the cluster core, deleted
// with their secrets only once their jobs have ended, and listed with what their jobs hold.
#include "master/teams.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "testing/failing_state_store.h"
#include "testing/memory_state_store.h"

namespace cohort::master {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::StartsWith;
using Call = cohort::testing::FailingStateStore::Call;

// Posted work waits here: a change that asks for a pass leaves one.
class PostedLoop final : public EventLoop {
 public:
  void Post(std::function<void()> work) override { posted.push_back(std::move(work)); }
  void RunAfter(Duration, std::function<void()>) override {}
  std::deque<std::function<void()>> posted;
};

std::vector<std::string> Names(const std::vector<TeamQuota>& teams) {
  std::vector<std::string> names;
  for (const auto& t : teams) names.push_back(t.name);
  return names;
}

class TeamsTest : public ::testing::Test {
 protected:
  void SetTeam(const std::string& name, int64_t guaranteed = 0) {
    auto set = teams_.Set(TeamQuota{name, guaranteed, std::nullopt});
    ASSERT_TRUE(set.ok()) << set.status().ToString();
  }

  // A job of two one-GPU workers in `team`, in `state` (with its tasks unless pending).
  Job& AddJob(const std::string& team, JobState state) {
    Job job;
    job.user = "ada";
    job.submitted_at = clock_.Now();
    job.spec.name = "train";
    job.spec.team = team;
    TaskGroupSpec g;
    g.role = "worker";
    g.replicas = 2;
    g.resources = Resources{1, 1000, 1LL << 30};
    g.command = {"true"};
    job.spec.tasks.push_back(g);
    auto created = jobs_.Create(std::move(job), {});
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    Job& added = **created;
    if (state != JobState::kPending) {
      added.attempt = 1;
      for (int i = 0; i < 2; ++i) {
        Task t;
        t.role = "worker";
        t.index = t.rank = i;
        t.resources = g.resources;
        added.tasks.push_back(t);
      }
    }
    added.state = state;
    jobs_.Reindex(added);
    return added;
  }

  cohort::testing::MemoryStateStore disk_;
  cohort::testing::FailingStateStore store_{disk_.Reopen()};
  std::vector<Status> fail_stops_;
  Journal journal_{store_, [this](const Status& s) { fail_stops_.push_back(s); }};
  ManualClock clock_;
  JobBook jobs_{journal_, clock_, scheduler::RuntimeHistory::kMaxKeys};
  PostedLoop loop_;
  SchedulingLoop scheduling_{jobs_, journal_, clock_, loop_, scheduler::NewScheduler(), 1'000'000};
  Secrets secrets_{store_, clock_};
  Teams teams_{store_, jobs_, secrets_, scheduling_};
};

TEST_F(TeamsTest, SetNamesEveryBadFieldAndWritesNothing) {
  auto set = teams_.Set(TeamQuota{"no spaces", -1, -2});
  EXPECT_EQ(set.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(set.status().details(),
              ElementsAre(StartsWith("name:"), StartsWith("gpus:"), StartsWith("max_gpus:")));
  EXPECT_EQ(store_.Calls(Call::kSaveTeam), 0);
  EXPECT_FALSE(teams_.Exists("no spaces"));
}

TEST_F(TeamsTest, AMaximumBelowTheGuaranteeIsRefused) {
  auto set = teams_.Set(TeamQuota{"vision", 8, 4});
  EXPECT_EQ(set.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(set.status().details(), ElementsAre(HasSubstr("below the guarantee of 8")));
  EXPECT_TRUE(teams_.Set(TeamQuota{"vision", 8, 8}).ok()) << "a maximum equal to it is fine";
}

TEST_F(TeamsTest, ASetTheStoreRefusesChangesNothing) {
  store_.FailNextWrites(1, {Call::kSaveTeam});
  EXPECT_FALSE(teams_.Set(TeamQuota{"vision", 4, std::nullopt}).ok());
  EXPECT_FALSE(teams_.Exists("vision"));
  EXPECT_THAT(scheduling_.cluster().teams(), IsEmpty());
  EXPECT_THAT(teams_.List(), SizeIs(1)) << "only the default team";
  EXPECT_THAT(loop_.posted, IsEmpty()) << "a pass for a change that did not happen";
}

TEST_F(TeamsTest, SetCreatesOrReplacesATeamInTheStoreAndTheClusterCore) {
  SetTeam("vision", 4);
  SetTeam("audio");
  ASSERT_TRUE(teams_.Set(TeamQuota{"vision", 8, 16}).ok());
  const auto& core = scheduling_.cluster().teams();
  EXPECT_THAT(Names(core), ElementsAre("audio", "vision"));
  EXPECT_EQ(core[1].guaranteed_gpus, 8);
  EXPECT_EQ(core[1].max_gpus, 16);
  EXPECT_THAT(Names(*disk_.LoadTeams()), ElementsAre("audio", "vision"));
  // The last pass's residue was computed under the old quotas.
  EXPECT_THAT(loop_.posted, SizeIs(1));
}

TEST_F(TeamsTest, DeleteOfATeamNoAdminCreatedIsNotFound) {
  EXPECT_EQ(teams_.Delete("vision").code(), StatusCode::kNotFound);
  EXPECT_EQ(teams_.Delete(kDefaultTeam).code(), StatusCode::kNotFound);
  EXPECT_TRUE(teams_.Exists(kDefaultTeam));
}

TEST_F(TeamsTest, DeleteIsRefusedUntilTheTeamsJobsHaveEnded) {
  SetTeam("vision");
  Job& job = AddJob("vision", JobState::kRunning);
  Status refused = teams_.Delete("vision");
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("1 job that has not ended"));
  EXPECT_TRUE(teams_.Exists("vision"));

  job.state = JobState::kKilled;
  jobs_.Reindex(job);
  ASSERT_TRUE(teams_.Delete("vision").ok());
  EXPECT_FALSE(teams_.Exists("vision"));
  EXPECT_THAT(scheduling_.cluster().teams(), IsEmpty());
  EXPECT_THAT(*disk_.LoadTeams(), IsEmpty());
}

TEST_F(TeamsTest, DeleteTakesTheTeamsSecretsAndNoOneElses) {
  SetTeam("vision");
  SetTeam("audio");
  ASSERT_TRUE(secrets_.Set(SecretScope::kTeam, "vision", "wandb", "v").ok());
  ASSERT_TRUE(secrets_.Set(SecretScope::kTeam, "audio", "wandb", "a").ok());
  ASSERT_TRUE(secrets_.Set(SecretScope::kUser, "vision", "wandb", "u").ok());
  ASSERT_TRUE(teams_.Delete("vision").ok());
  // A team created again under the name must not inherit them.
  SetTeam("vision");
  EXPECT_THAT(secrets_.List(SecretScope::kTeam, "vision"), IsEmpty());
  EXPECT_THAT(secrets_.List(SecretScope::kTeam, "audio"), SizeIs(1));
  EXPECT_THAT(secrets_.List(SecretScope::kUser, "vision"), SizeIs(1));
}

TEST_F(TeamsTest, ADeleteTheStoreRefusesKeepsTheTeam) {
  SetTeam("vision");
  store_.FailNextWrites(1, {Call::kDeleteTeam});
  EXPECT_FALSE(teams_.Delete("vision").ok());
  EXPECT_TRUE(teams_.Exists("vision"));
  EXPECT_THAT(Names(scheduling_.cluster().teams()), ElementsAre("vision"));
}

TEST_F(TeamsTest, ListCountsWhatEachTeamsJobsHoldAndWaitFor) {
  SetTeam("vision");
  AddJob("vision", JobState::kPending);
  AddJob("vision", JobState::kPending);
  Job& running = AddJob("vision", JobState::kRunning);
  running.tasks[1].state = TaskState::kSucceeded;  // its GPU went back
  AddJob("vision", JobState::kSucceeded);
  AddJob(kDefaultTeam, JobState::kStopping);
  AddJob("deleted", JobState::kRunning);  // a team no longer listed is not invented

  auto teams = teams_.List();
  ASSERT_EQ(teams.size(), 2u);
  EXPECT_EQ(teams[0].quota.name, kDefaultTeam);
  EXPECT_TRUE(teams[0].implicit);
  EXPECT_EQ(teams[0].running_jobs, 1);
  EXPECT_EQ(teams[0].held.gpus, 2);
  EXPECT_EQ(teams[1].quota.name, "vision");
  EXPECT_FALSE(teams[1].implicit);
  EXPECT_EQ(teams[1].pending_jobs, 2);
  EXPECT_EQ(teams[1].running_jobs, 1);
  EXPECT_EQ(teams[1].held.gpus, 1);
  EXPECT_EQ(teams[1].BorrowedGpus(), 1) << "held beyond a guarantee of 0";
}

TEST_F(TeamsTest, LoadHandsTheStoredTeamsToTheClusterCore) {
  ASSERT_TRUE(disk_.SaveTeam(TeamQuota{"vision", 2, std::nullopt}).ok());
  ASSERT_TRUE(teams_.Load().ok());
  EXPECT_TRUE(teams_.Exists("vision"));
  EXPECT_FALSE(teams_.Exists("audio"));
  EXPECT_THAT(Names(scheduling_.cluster().teams()), ElementsAre("vision"));
}

}  // namespace
}  // namespace cohort::master
