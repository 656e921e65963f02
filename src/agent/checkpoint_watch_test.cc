// The checkpoint directory's watch and the report throttle, on a real temporary directory and a
// manual clock; files get the modification times the test gives them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "agent/checkpoint_throttle.h"
#include "agent/checkpoint_watch.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

class CheckpointWatchTest : public ::testing::Test {
 protected:
  CheckpointWatchTest()
      : dir_(fs::temp_directory_path() /
             ("cohort-ckpt-watch-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~CheckpointWatchTest() override { fs::remove_all(dir_); }

  // Writes `name` with `bytes` and the modification time `mtime`.
  void Write(const std::string& name, const std::string& bytes, Timestamp mtime) {
    std::ofstream(dir_ / name) << bytes;
    Touch(name, mtime);
  }
  void Touch(const std::string& name, Timestamp mtime) {
    timespec times[2];
    times[0].tv_sec = times[1].tv_sec = ToMicros(mtime) / 1'000'000;
    times[0].tv_nsec = times[1].tv_nsec = (ToMicros(mtime) % 1'000'000) * 1000;
    ASSERT_EQ(::utimensat(AT_FDCWD, (dir_ / name).c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
  }

  fs::path dir_;
  const Timestamp t0_ = FromMicros(1'700'000'000'000'000);
};

TEST_F(CheckpointWatchTest, AFileCountsOnceItStaysAsItIsForOneLook) {
  Write("old.pt", "earlier attempt", t0_ - seconds(100));
  CheckpointWatch watch(dir_.string(), t0_);
  EXPECT_EQ(watch.Look(t0_), std::nullopt) << "what was there before the task is known";

  Write("step-10.pt", "half", t0_ + seconds(1));
  EXPECT_EQ(watch.Look(t0_ + seconds(2)), std::nullopt) << "new: it may still be written";
  Write("step-10.pt", "half and the rest", t0_ + seconds(3));
  EXPECT_EQ(watch.Look(t0_ + seconds(4)), std::nullopt) << "it changed: still being written";
  EXPECT_EQ(watch.Look(t0_ + seconds(5)), t0_ + seconds(3)) << "whole: its modification time";
  EXPECT_EQ(watch.Look(t0_ + seconds(6)), std::nullopt) << "counted once";

  // Rewritten in place with a modification time ahead of the agent's clock: the look that first
  // saw it so is the later bound.
  Write("step-10.pt", "the next one", t0_ + seconds(60));
  EXPECT_EQ(watch.Look(t0_ + seconds(7)), std::nullopt);
  EXPECT_EQ(watch.Look(t0_ + seconds(8)), t0_ + seconds(7));
}

TEST_F(CheckpointWatchTest, AFileWrittenSinceTheTaskStartedCountsFromTheFirstLook) {
  Write("before.pt", "an earlier attempt's", t0_ - seconds(1));
  Write("early.pt", "written before the first look", t0_ + seconds(1));
  CheckpointWatch watch(dir_.string(), t0_);
  EXPECT_EQ(watch.Look(t0_ + seconds(2)), std::nullopt) << "it may still be written";
  EXPECT_EQ(watch.Look(t0_ + seconds(3)), t0_ + seconds(1));
  EXPECT_EQ(watch.Look(t0_ + seconds(4)), std::nullopt);
}

TEST_F(CheckpointWatchTest, ARenameIntoPlaceCountsAndTemporaryNamesDoNot) {
  CheckpointWatch watch(dir_.string(), t0_);
  EXPECT_EQ(watch.Look(t0_), std::nullopt);
  Write("model.pt.tmp.123", "being written", t0_ + seconds(1));
  Write(".hidden", "x", t0_ + seconds(1));
  EXPECT_EQ(watch.Look(t0_ + seconds(2)), std::nullopt);
  EXPECT_EQ(watch.Look(t0_ + seconds(3)), std::nullopt) << "temporary and hidden names are skipped";
  fs::rename(dir_ / "model.pt.tmp.123", dir_ / "model.pt");
  EXPECT_EQ(watch.Look(t0_ + seconds(4)), std::nullopt);
  EXPECT_EQ(watch.Look(t0_ + seconds(5)), t0_ + seconds(1));
}

TEST_F(CheckpointWatchTest, ADirectoryCountsByItsOwnEntriesAndLinksAreNotFollowed) {
  CheckpointWatch watch(dir_.string(), t0_);
  EXPECT_EQ(watch.Look(t0_), std::nullopt);
  fs::create_directory(dir_ / "checkpoint-500");
  Write("checkpoint-500/model.safetensors", "weights", t0_ + seconds(1));
  Touch("checkpoint-500", t0_ + seconds(1));
  fs::create_symlink("/etc", dir_ / "link");
  EXPECT_EQ(watch.Look(t0_ + seconds(2)), std::nullopt);
  EXPECT_EQ(watch.Look(t0_ + seconds(3)), t0_ + seconds(1)) << "the directory, not the link";
  EXPECT_EQ(watch.Look(t0_ + seconds(4)), std::nullopt);
}

TEST_F(CheckpointWatchTest, LooksAtABoundedNumberOfEntries) {
  for (int i = 0; i < 5; ++i) Write("f" + std::to_string(i), "x", t0_);
  CheckpointWatch watch(dir_.string(), t0_, 3);
  watch.Look(t0_);
  EXPECT_TRUE(watch.truncated());
  CheckpointWatch roomy(dir_.string(), t0_, 5);
  roomy.Look(t0_);
  EXPECT_FALSE(roomy.truncated());
}

TEST_F(CheckpointWatchTest, ADirectoryThatAppearsLaterIsWatchedFromItsStart) {
  fs::path later = dir_ / "later";
  CheckpointWatch watch(later.string(), t0_);
  EXPECT_EQ(watch.Look(t0_), std::nullopt);
  fs::create_directory(later);
  Write("later/a.pt", "x", t0_ + seconds(1));
  EXPECT_EQ(watch.Look(t0_ + seconds(2)), std::nullopt);
  EXPECT_EQ(watch.Look(t0_ + seconds(3)), t0_ + seconds(1));
}

TEST(CheckpointThrottle, MovesAtMostOncePerIntervalAndSendsTheNewestAfterwards) {
  const Timestamp t0 = FromMicros(1'700'000'000'000'000);
  CheckpointThrottle throttle;
  EXPECT_FALSE(throttle.Advance(t0));
  EXPECT_EQ(throttle.reported(), std::nullopt);
  throttle.Noticed(t0);
  EXPECT_TRUE(throttle.Advance(t0));
  EXPECT_EQ(throttle.reported(), t0);
  // A chatty task: a checkpoint every 10 ms for 19.99 s moves the report 3 more times, not 1,999.
  int moves = 0;
  Timestamp now = t0;
  for (int i = 0; i < 1999; ++i) {
    now += std::chrono::milliseconds(10);
    throttle.Noticed(now);
    moves += throttle.Advance(now);
  }
  EXPECT_EQ(moves, 3);
  EXPECT_LT(*throttle.reported(), now);
  // The newest goes once the interval is over, with nothing new noticed.
  EXPECT_TRUE(throttle.Advance(now + kCheckpointReportInterval));
  EXPECT_EQ(throttle.reported(), now);
  EXPECT_FALSE(throttle.Advance(now + 10 * kCheckpointReportInterval)) << "nothing newer";
  throttle.Noticed(now - seconds(1));
  EXPECT_FALSE(throttle.Advance(now + 20 * kCheckpointReportInterval)) << "older than reported";
}

}  // namespace
}  // namespace cohort::agent
