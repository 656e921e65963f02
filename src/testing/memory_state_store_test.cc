#include "testing/memory_state_store.h"

#include <gtest/gtest.h>

#include "testing/state_store_contract.h"

namespace cohort::testing {
namespace {

// The contract's backend: one store kept as "the disk"; every Open is a Reopen of it.
class MemoryBackend : public StateStoreBackend {
 public:
  StatusOr<std::unique_ptr<state::StateStore>> Open() override {
    return std::unique_ptr<state::StateStore>(disk_.Reopen());
  }

 private:
  MemoryStateStore disk_;
};

INSTANTIATE_TEST_SUITE_P(Memory, StateStoreContract,
                         ::testing::Values(StateStoreContractParam{
                             "Memory", [] { return std::make_unique<MemoryBackend>(); }}),
                         StateStoreContractParamName);

// What the contract leaves open and the memory store still does as SQLite does.

TEST(MemoryStateStore, ReopenedStoresShareTheirContents) {
  MemoryStateStore disk;
  auto a = disk.Reopen();
  auto b = a->Reopen();
  a.reset();  // the contents outlive the store they were written through
  ASSERT_TRUE(b->SaveTeam(TeamQuota{"vision", 4, std::nullopt}).ok());
  auto teams = disk.LoadTeams();
  ASSERT_TRUE(teams.ok());
  ASSERT_EQ(teams->size(), 1u);
  EXPECT_EQ((*teams)[0].name, "vision");
}

TEST(MemoryStateStore, SeparateStoresDoNotShare) {
  MemoryStateStore one;
  MemoryStateStore two;
  ASSERT_TRUE(one.CreateJob(Job{}, {}).ok());
  auto jobs = two.LoadJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
}

TEST(MemoryStateStore, NodesAreCheckedWhenTheyRegisterNotWhenTheyLoadAsInSqlite) {
  // SQLite keeps a node's JSON form and decodes it on load. Whether a node may register is
  // ValidateNodeInfo's to say, at registration: a node stored by a master with looser rules
  // (here, without an address) still loads, so that the master can start.
  MemoryStateStore store;
  Node node;
  node.info.id = "node-a";
  ASSERT_TRUE(store.SaveNode(node).ok());
  auto nodes = store.LoadNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].info.id, "node-a");
  EXPECT_EQ((*nodes)[0].info.address, "");
}

TEST(MemoryStateStore, SchemaVersionIsZero) { EXPECT_EQ(MemoryStateStore().SchemaVersion(), 0); }

}  // namespace
}  // namespace cohort::testing
