// Journal: batches of writes as one transaction of the store, announcements held until the
// outermost batch commits, and the fail-stop that silences them.
#include "master/journal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace cohort::master {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A store that only opens and commits batches, counting them, and fails them on demand: the
// journal writes nothing else itself.
class BatchStore final : public state::StateStore {
 public:
  Status BeginBatch() override {
    ++begun;
    return begin_error;
  }
  Status CommitBatch() override {
    ++committed;
    return commit_error;
  }

  int begun = 0;
  int committed = 0;
  Status begin_error = Status::Ok();
  Status commit_error = Status::Ok();

  StatusOr<Job> CreateJob(Job, std::vector<JobEvent>) override { return Unused(); }
  using StateStore::SaveJob;
  Status SaveJob(const Job&, const std::vector<JobEvent>&, const std::vector<state::TaskUsage>&,
                 const RuntimeHistoryChange&) override {
    return Unused();
  }
  StatusOr<std::vector<Job>> LoadJobs() override { return Unused(); }
  StatusOr<state::EventPage> ReadEvents(JobId, const state::EventRange&) override {
    return Unused();
  }
  StatusOr<std::vector<RuntimeHistoryRow>> LoadRuntimeHistory() override { return Unused(); }
  Status SaveTeam(const TeamQuota&) override { return Unused(); }
  Status DeleteTeam(const std::string&) override { return Unused(); }
  StatusOr<std::vector<TeamQuota>> LoadTeams() override { return Unused(); }
  Status SaveNode(const Node&) override { return Unused(); }
  Status DeleteNode(const std::string&) override { return Unused(); }
  StatusOr<std::vector<Node>> LoadNodes() override { return Unused(); }
  Status ScanUsage(const state::UsageScan&,
                   const std::function<void(const state::TaskUsage&)>&) override {
    return Unused();
  }
  Status ScanMilestones(const state::UsageScan&,
                        const std::function<void(const state::JobMilestone&)>&) override {
    return Unused();
  }
  StatusOr<int64_t> BeginAudit(const state::AuditEntry&) override { return Unused(); }
  Status FinishAudit(int64_t, int, const std::string&, const std::string&) override {
    return Unused();
  }
  StatusOr<std::vector<state::AuditEntry>> LoadAudit(const state::AuditQuery&) override {
    return Unused();
  }
  StatusOr<int64_t> PruneAudit(Timestamp, int64_t) override { return Unused(); }
  Status SaveUser(const User&) override { return Unused(); }
  Status DeleteUser(const std::string&) override { return Unused(); }
  StatusOr<std::vector<User>> LoadUsers() override { return Unused(); }
  Status SaveToken(const TokenRecord&) override { return Unused(); }
  Status DeleteToken(const std::string&) override { return Unused(); }
  StatusOr<std::vector<TokenRecord>> LoadTokens() override { return Unused(); }
  Status SaveSecret(const Secret&) override { return Unused(); }
  Status DeleteSecret(SecretScope, const std::string&, const std::string&) override {
    return Unused();
  }
  StatusOr<std::vector<Secret>> LoadSecrets() override { return Unused(); }
  Status SaveSweep(const SweepRecord&) override { return Unused(); }
  StatusOr<std::vector<SweepRecord>> LoadSweeps() override { return Unused(); }
  int SchemaVersion() const override { return 0; }

 private:
  static Status Unused() { return Status::Internal("the journal writes nothing but batches"); }
};

// What the listener heard, each with how many commits the store had made by then: hearing of a
// change before its commit is the bug these tests look for.
class Heard final : public MasterListener {
 public:
  explicit Heard(const BatchStore& store) : store_(store) {}
  void OnJobChanged(JobId id) override { jobs.emplace_back(id, store_.committed); }
  void OnNodeChanged(const std::string& node) override {
    nodes.emplace_back(node, store_.committed);
  }
  std::vector<std::pair<JobId, int>> jobs;
  std::vector<std::pair<std::string, int>> nodes;

 private:
  const BatchStore& store_;
};

class JournalTest : public ::testing::Test {
 protected:
  JournalTest() { journal_.SetListener(&heard_); }

  BatchStore store_;
  std::vector<Status> fail_stops_;
  Journal journal_{store_, [this](const Status& s) { fail_stops_.push_back(s); }};
  Heard heard_{store_};
};

TEST_F(JournalTest, AnAnnouncementOutsideABatchIsHeardAtOnce) {
  journal_.AnnounceJob(7);
  journal_.AnnounceNode("a");
  EXPECT_THAT(heard_.jobs, ElementsAre(std::pair<JobId, int>{7, 0}));
  EXPECT_THAT(heard_.nodes, ElementsAre(std::pair<std::string, int>{"a", 0}));
  EXPECT_EQ(store_.begun, 0) << "no batch, no transaction";
}

TEST_F(JournalTest, AnnouncementsInABatchAreHeardOnlyAfterItsCommit) {
  {
    Journal::Batch batch(journal_);
    journal_.AnnounceJob(1);
    journal_.AnnounceNode("a");
    EXPECT_THAT(heard_.jobs, IsEmpty());
    EXPECT_THAT(heard_.nodes, IsEmpty());
  }
  EXPECT_THAT(heard_.jobs, ElementsAre(std::pair<JobId, int>{1, 1}));
  EXPECT_THAT(heard_.nodes, ElementsAre(std::pair<std::string, int>{"a", 1}));
  EXPECT_THAT(fail_stops_, IsEmpty());
}

TEST_F(JournalTest, NestedBatchesAreOneTransactionCommittedByTheOutermost) {
  {
    Journal::Batch outer(journal_);
    {
      Journal::Batch inner(journal_);
      journal_.AnnounceJob(1);
    }
    EXPECT_EQ(store_.committed, 0) << "the inner batch committed the outer one's writes";
    EXPECT_THAT(heard_.jobs, IsEmpty()) << "heard of before the outermost batch committed";
    journal_.AnnounceJob(2);
  }
  EXPECT_EQ(store_.begun, 1);
  EXPECT_EQ(store_.committed, 1);
  EXPECT_THAT(heard_.jobs, ElementsAre(std::pair<JobId, int>{1, 1}, std::pair<JobId, int>{2, 1}));
}

TEST_F(JournalTest, AJobChangedTwiceInABatchIsHeardOfOnce) {
  {
    Journal::Batch batch(journal_);
    journal_.AnnounceJob(3);
    journal_.AnnounceJob(3);
  }
  EXPECT_THAT(heard_.jobs, ElementsAre(std::pair<JobId, int>{3, 1}));
}

TEST_F(JournalTest, AFailedCommitFailsStopAndAnnouncesNothing) {
  store_.commit_error = Status::Internal("disk full");
  {
    Journal::Batch batch(journal_);
    journal_.AnnounceJob(1);
    journal_.AnnounceNode("a");
  }
  ASSERT_EQ(fail_stops_.size(), 1u);
  EXPECT_THAT(fail_stops_[0].message(), HasSubstr("disk full"));
  EXPECT_TRUE(journal_.stopped());
  EXPECT_THAT(heard_.jobs, IsEmpty()) << "a client heard of a change that is not durable";
  EXPECT_THAT(heard_.nodes, IsEmpty());
}

TEST_F(JournalTest, AFailStopWithinABatchSilencesItButStillEndsTheStoresBatch) {
  {
    Journal::Batch batch(journal_);
    journal_.AnnounceJob(1);
    journal_.FailStop(Status::Internal("saving job 1: disk full"));
    journal_.AnnounceJob(2);
  }
  EXPECT_THAT(heard_.jobs, IsEmpty());
  // A batch the store opened must end there, or the next one would nest in it.
  EXPECT_EQ(store_.committed, 1);
  EXPECT_EQ(fail_stops_.size(), 1u);
}

TEST_F(JournalTest, WhatABatchChangedIsNotHeardOfInALaterBatchAfterAFailStop) {
  {
    Journal::Batch batch(journal_);
    journal_.AnnounceJob(1);
    journal_.FailStop(Status::Internal("disk full"));
  }
  // A test's fail-stop handler returns, so the master works on: it must stay silent.
  {
    Journal::Batch batch(journal_);
    journal_.AnnounceJob(2);
  }
  EXPECT_THAT(heard_.jobs, IsEmpty());
}

TEST_F(JournalTest, AFailedBeginFailsStop) {
  store_.begin_error = Status::Internal("database is locked");
  {
    Journal::Batch batch(journal_);
    journal_.AnnounceJob(1);
  }
  ASSERT_FALSE(fail_stops_.empty());
  EXPECT_THAT(fail_stops_[0].message(), HasSubstr("locked"));
  EXPECT_THAT(heard_.jobs, IsEmpty());
}

TEST_F(JournalTest, ABatchAfterACommittedOneStartsAFreshTransaction) {
  { Journal::Batch first(journal_); }
  {
    Journal::Batch second(journal_);
    journal_.AnnounceJob(4);
    EXPECT_THAT(heard_.jobs, IsEmpty()) << "the depth of the first batch was not given back";
  }
  EXPECT_EQ(store_.begun, 2);
  EXPECT_THAT(heard_.jobs, ElementsAre(std::pair<JobId, int>{4, 2}));
}

}  // namespace
}  // namespace cohort::master
