// MasterDeps: the master opens nothing of its own; whoever starts it hands it what it acts on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "master/master_test_fixture.h"
#include "testing/memory_state_store.h"

namespace cohort::master {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(MasterDeps, TheMasterMakesNoDirectoryAndOpensNoDatabaseOfItsOwn) {
  fs::path root = fs::temp_directory_path() / ("cohort-master-deps-" + std::to_string(::getpid()));
  fs::remove_all(root);
  MasterConfig config;
  config.data_dir = (root / "data").string();  // never made by the master
  std::deque<std::function<void()>> posted;
  QueueLoop loop(posted);
  ManualClock clock;
  {
    auto m = Master::Create(
        config,
        cohort::testing::TestMasterDeps((root / "elsewhere").string(),
                                        std::make_unique<cohort::testing::MemoryStateStore>()),
        clock, loop);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    NodeInfo info;
    info.id = "a";
    info.address = "127.0.0.1";
    info.milli_cpus = 1000;
    info.memory_bytes = 1LL << 30;
    ASSERT_TRUE((*m)->nodes().Register(info).ok());
  }
  EXPECT_FALSE(fs::exists(config.data_dir)) << "the master made its data directory itself";
  EXPECT_FALSE(fs::exists(StorageRootOf(config)));
  fs::remove_all(root);
}

TEST(MasterDeps, EachIsNeeded) {
  std::deque<std::function<void()>> posted;
  QueueLoop loop(posted);
  ManualClock clock;
  auto m = Master::Create(MasterConfig{}, MasterDeps{}, clock, loop);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr("state store"));
}

}  // namespace
}  // namespace cohort::master
