#include "agent/checkpoint_sync.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "os/process.h"
#include "os/real_clock.h"
#include "store/directory_store.h"
#include "store/open_store.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::string Read(const fs::path& path) { return ReadFileOrEmpty(path.string()); }

class CheckpointSyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("checkpoint_sync_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    for (const char* d : {"task1", "task2", "node1/ckpt", "node2/ckpt"}) {
      fs::create_directories(root_ / d);
    }
    StoreAccess access;
    access.directory = (root_ / "store").string();
    for (const char* task : {"task1", "task2"}) {
      Write(root_ / task / kStoreAccessFile, ToJson(access).dump());
    }
  }
  void TearDown() override { fs::remove_all(root_); }

  CheckpointSyncSpec Spec(const char* node) {
    CheckpointSyncSpec spec;
    spec.dir = (root_ / node / "ckpt").string();
    spec.key = "jobs/7/checkpoints";
    spec.look = 20ms;
    spec.restore_limit = 100ms;
    return spec;
  }
  std::unique_ptr<CheckpointSync> Sync(CheckpointSyncSpec spec, const char* task, int attempt,
                                       ObjectStoreOpener open = store::OpenStore) {
    spec.attempt = attempt;
    return std::make_unique<CheckpointSync>(spec, (root_ / task).string(), open, clock_,
                                            [this](const std::string& line) {
                                              std::lock_guard lock(mu_);
                                              said_ += line + "\n";
                                            });
  }
  std::optional<store::Snapshot> Stored() {
    auto store = store::OpenDirectoryStore((root_ / "store").string());
    if (!store.ok()) return std::nullopt;
    auto read = store::ReadSnapshot(**store, "jobs/7/checkpoints");
    return read.ok() ? *read : std::nullopt;
  }
  // Waits (at most 10 s) until the store holds a snapshot that `done` accepts.
  bool WaitForSnapshot(const std::function<bool(const store::Snapshot&)>& done) {
    for (int i = 0; i < 1000; ++i) {
      if (auto s = Stored(); s && done(*s)) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  std::string Said() {
    std::lock_guard lock(mu_);
    return said_;
  }

  fs::path root_;
  RealClock clock_;
  std::mutex mu_;
  std::string said_;
};

TEST_F(CheckpointSyncTest, AnAttemptsCheckpointIsRestoredIntoTheNextOnAnotherNode) {
  CheckpointSyncSpec spec = Spec("node1");
  spec.push = true;
  auto first = Sync(spec, "task1", 1);
  ASSERT_TRUE(first->Restore(std::nullopt).ok());  // restore off: nothing to do
  first->Start();
  Write(root_ / "node1/ckpt/model.pt", "weights at 40");
  Write(root_ / "task1" / kCheckpointStepFile, "40\n");
  ASSERT_TRUE(WaitForSnapshot([](const store::Snapshot& s) { return s.step == 40; }));
  EXPECT_TRUE(first->Finish(true));
  EXPECT_EQ(Stored()->attempt, 1);

  CheckpointSyncSpec next = Spec("node2");
  next.restore = true;
  auto second = Sync(next, "task2", 2);
  ASSERT_TRUE(second->Restore(std::nullopt).ok()) << Said();
  EXPECT_EQ(Read(root_ / "node2/ckpt/model.pt"), "weights at 40");
  auto restored = ParseJson(Read(root_ / "task2" / kRestoredFile));
  ASSERT_TRUE(restored.ok());
  EXPECT_EQ((*restored)["attempt"], 1);
  EXPECT_EQ((*restored)["step"], 40);
  EXPECT_EQ((*restored)["files"], 1);
  EXPECT_NE(Said().find("restored the checkpoint of attempt 1 at step 40"), std::string::npos)
      << Said();
}

TEST_F(CheckpointSyncTest, LargeCheckpointsWaitForTheirIntervalButTheLastAlwaysGoes) {
  CheckpointSyncSpec spec = Spec("node1");
  spec.push = true;
  spec.prompt_bytes = 10;
  spec.large_every = std::chrono::hours(1);
  auto sync = Sync(spec, "task1", 1);
  sync->Start();
  Write(root_ / "node1/ckpt/model.pt", "a large checkpoint 1");
  ASSERT_TRUE(WaitForSnapshot([](const store::Snapshot&) { return true; }));
  // A small file goes at once...
  Write(root_ / "node1/ckpt/small", "s");
  ASSERT_TRUE(WaitForSnapshot([](const store::Snapshot& s) { return s.bytes == 21; }));
  // ...a large change waits for the interval...
  Write(root_ / "node1/ckpt/model.pt", "a large checkpoint 22");
  std::this_thread::sleep_for(300ms);  // fifteen looks
  EXPECT_EQ(Stored()->bytes, 21);
  // ...and the last push sends it whatever the interval.
  EXPECT_TRUE(sync->Finish(true));
  EXPECT_EQ(Stored()->bytes, 22);
}

TEST_F(CheckpointSyncTest, NoLastPushForATaskThatSucceeded) {
  CheckpointSyncSpec spec = Spec("node1");
  spec.push = true;
  spec.look = std::chrono::hours(1);
  auto sync = Sync(spec, "task1", 1);
  sync->Start();
  Write(root_ / "node1/ckpt/model.pt", "done");
  EXPECT_TRUE(sync->Finish(false));
  EXPECT_FALSE(Stored().has_value());
}

TEST_F(CheckpointSyncTest, ARestoreThatCannotReachTheStoreGivesUpWithTheReason) {
  fs::remove(root_ / "task2" / kStoreAccessFile);
  CheckpointSyncSpec spec = Spec("node2");
  spec.restore = true;
  auto sync = Sync(spec, "task2", 2);
  Status s = sync->Restore(std::nullopt);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("access has not come from the master"), std::string::npos)
      << s.message();
}

TEST_F(CheckpointSyncTest, AStoreThatHangsHoldsTheLastPushNoLongerThanItsLimit) {
  CheckpointSyncSpec spec = Spec("node1");
  spec.push = true;
  spec.look = std::chrono::hours(1);
  spec.final_limit = 200ms;
  auto hung = std::make_shared<std::atomic<bool>>(false);
  auto sync = Sync(spec, "task1", 1, [hung](const StoreAccess&) {
    *hung = true;
    std::this_thread::sleep_for(3s);
    return StatusOr<std::unique_ptr<store::ObjectStore>>(Status::Unavailable("hung"));
  });
  sync->Start();
  Write(root_ / "node1/ckpt/model.pt", "late");
  auto began = std::chrono::steady_clock::now();
  EXPECT_FALSE(sync->Finish(true));
  EXPECT_LT(std::chrono::steady_clock::now() - began, 2s);
  EXPECT_TRUE(*hung);
  EXPECT_NE(Said().find("was not stored within"), std::string::npos) << Said();
  sync.release();  // its thread still runs: as the supervisor does, it is never destroyed
}

}  // namespace
}  // namespace cohort::agent
