// StateDisk: the free space of the state disk against the reserve decides read-only mode, with a
// margin before leaving it; a disk that cannot be measured changes nothing. And the journal
// reads it before every change the outside asks for.
#include "master/state_disk.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "master/journal.h"
#include "testing/memory_state_store.h"

namespace cohort::master {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1ULL << 20;

class UnreadableDisk final : public DiskSpace {
 public:
  StatusOr<uint64_t> FreeBytes() override { return Status::Internal("statvfs: EIO"); }
  const std::string& where() const override { return where_; }

 private:
  std::string where_ = "/broken";
};

TEST(StateDisk, UnderTheReserveIsReadOnlyAndOneAndAHalfTimesItIsWritable) {
  auto owned = std::make_unique<FixedDiskSpace>(100 * kMiB, "/var/lib/cohort");
  FixedDiskSpace& disk = *owned;
  StateDisk state_disk(std::move(owned), 64 * kMiB);

  EXPECT_FALSE(state_disk.Check());
  EXPECT_FALSE(state_disk.read_only());

  disk.Set(64 * kMiB);  // at the reserve: still writable
  EXPECT_FALSE(state_disk.Check());
  disk.Set(64 * kMiB - 1);
  EXPECT_TRUE(state_disk.Check());
  ASSERT_TRUE(state_disk.read_only());
  EXPECT_THAT(*state_disk.read_only(), HasSubstr("/var/lib/cohort"));
  EXPECT_THAT(*state_disk.read_only(), HasSubstr("under the reserve of 64Mi"));
  EXPECT_THAT(*state_disk.read_only(), HasSubstr("--state-disk-reserve"));
  EXPECT_FALSE(state_disk.Check());  // no change, nothing to say

  disk.Set(96 * kMiB - 1);
  EXPECT_FALSE(state_disk.Check());
  EXPECT_TRUE(state_disk.read_only());
  disk.Set(96 * kMiB);
  EXPECT_TRUE(state_disk.Check());
  EXPECT_FALSE(state_disk.read_only());
}

TEST(StateDisk, ADiskThatCannotBeMeasuredOrNoDiskChangesNothing) {
  StateDisk unreadable(std::make_unique<UnreadableDisk>(), 64 * kMiB);
  EXPECT_FALSE(unreadable.Check());
  EXPECT_FALSE(unreadable.read_only());
  StateDisk none(nullptr, 64 * kMiB);
  EXPECT_FALSE(none.Check());
  EXPECT_FALSE(none.read_only());
}

// The disk may fill between two ticks: a change asked of the master reads it first.
TEST(StateDisk, TheJournalReadsTheDiskBeforeEveryChangeAskedOfIt) {
  testing::MemoryStateStore store;
  auto owned = std::make_unique<FixedDiskSpace>(100 * kMiB);
  FixedDiskSpace& disk = *owned;
  Journal journal(
      store, [](const Status& s) { FAIL() << s.ToString(); },
      StateDisk(std::move(owned), 64 * kMiB));
  EXPECT_TRUE(journal.CheckWritable().ok());
  disk.Set(0);
  EXPECT_FALSE(journal.read_only());  // nobody looked yet
  Status refused = journal.CheckWritable();
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable);
  ASSERT_TRUE(journal.read_only());
  EXPECT_EQ(refused.message(), *journal.read_only());
  disk.Set(1ULL << 30);
  EXPECT_TRUE(journal.CheckWritable().ok());
  EXPECT_FALSE(journal.read_only());
}

}  // namespace
}  // namespace cohort::master
