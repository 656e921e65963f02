// The task log store on a real directory: idempotent appends, gaps, reads, listing, and the
// wake-ups that followers wait for.
#include "master/log_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace cohort::master {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Each test gets its own empty directory; the store creates it on the first append.
class LogStoreTest : public ::testing::Test {
 protected:
  static fs::path FreshDirectory() {
    fs::path dir = fs::temp_directory_path() /
                   ("cohort-log-store-test-" + std::to_string(getpid()) + "-" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    return dir;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_ = FreshDirectory();
  LogStore store_{dir_.string()};
};

TEST_F(LogStoreTest, AppendsIdempotentlyAndRefusesGaps) {
  TaskId task{3, 1, "worker", 0};
  EXPECT_EQ(*store_.Size(task), 0);
  EXPECT_EQ(*store_.Append(task, 0, "hello\n"), 6);
  EXPECT_EQ(*store_.Append(task, 0, "hello\nworld\n"), 12);  // a resend that overlaps
  EXPECT_EQ(*store_.Append(task, 6, "world\n"), 12);         // nothing new
  EXPECT_EQ(*store_.Append(task, 12, ""), 12);
  auto gap = store_.Append(task, 40, "x");
  EXPECT_EQ(gap.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(gap.status().message(), HasSubstr("has 12 bytes; send from offset 12"));
  // A gap in a log that does not exist yet creates nothing.
  TaskId other{3, 1, "worker", 1};
  EXPECT_THAT(store_.Append(other, 5, "x").status().message(), HasSubstr("send from offset 0"));
  EXPECT_FALSE(fs::exists(dir_ / "3" / "1" / "worker.1.log"));
  EXPECT_EQ(*store_.Size(task), 12);
  std::ifstream in(dir_ / "3" / "1" / "worker.0.log");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all, "hello\nworld\n");
}

TEST_F(LogStoreTest, RefusesIdsThatCouldNameOtherFilesAndNegativeOffsets) {
  for (const TaskId& bad : std::vector<TaskId>{
           {3, 1, "../x", 0}, {3, 1, "", 0}, {0, 1, "w", 0}, {3, 0, "w", 0}, {3, 1, "w", -1}}) {
    EXPECT_EQ(store_.Append(bad, 0, "x").status().code(), StatusCode::kInvalidArgument)
        << bad.ToString();
    EXPECT_EQ(store_.Read(bad, 0, 10).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(store_.Append({3, 1, "w", 0}, -1, "x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_.Read({3, 1, "w", 0}, -1, 10).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(LogStoreTest, ReadsBoundedRanges) {
  TaskId task{3, 2, "ps", 1};
  EXPECT_EQ(*store_.Read(task, 0, 10), "");  // no log yet
  ASSERT_TRUE(store_.Append(task, 0, "0123456789abcdef").ok());
  EXPECT_EQ(*store_.Read(task, 0, 4), "0123");
  EXPECT_EQ(*store_.Read(task, 10, 100), "abcdef");
  EXPECT_EQ(*store_.Read(task, 16, 100), "");
  EXPECT_EQ(*store_.Read(task, 99, 100), "");
  EXPECT_EQ(*store_.Read(task, 3, 0), "");
}

TEST_F(LogStoreTest, ListsTheTasksOfOneAttemptSorted) {
  EXPECT_TRUE(store_.TasksWithLogs(3, 1)->empty());
  for (const TaskId& t : std::vector<TaskId>{
           {3, 1, "worker", 10}, {3, 1, "worker", 2}, {3, 1, "chief", 0}, {3, 2, "worker", 0}}) {
    ASSERT_TRUE(store_.Append(t, 0, "x").ok());
  }
  std::ofstream(dir_ / "3" / "1" / "notes.txt") << "not a log";
  EXPECT_THAT(
      *store_.TasksWithLogs(3, 1),
      ElementsAre(TaskId{3, 1, "chief", 0}, TaskId{3, 1, "worker", 2}, TaskId{3, 1, "worker", 10}));
  EXPECT_THAT(*store_.TasksWithLogs(3, 2), ElementsAre(TaskId{3, 2, "worker", 0}));
  EXPECT_TRUE(store_.TasksWithLogs(4, 1)->empty());
}

TEST_F(LogStoreTest, WakesSubscribersOfTheJobAfterBytesAreStored) {
  TaskId task{3, 1, "worker", 0};
  int woken = 0;
  int64_t size_when_woken = -1;
  int other_job = 0;
  auto id = store_.Subscribe(3, [&] {
    ++woken;
    size_when_woken = *store_.Size(task);
  });
  store_.Subscribe(4, [&] { ++other_job; });
  ASSERT_TRUE(store_.Append(task, 0, "a\n").ok());
  EXPECT_EQ(woken, 1);
  EXPECT_EQ(size_when_woken, 2);                                   // the bytes were in place
  ASSERT_TRUE(store_.Append(task, 0, "a\n").ok());                 // nothing new: nobody is woken
  ASSERT_TRUE(store_.Append({3, 2, "worker", 0}, 0, "b\n").ok());  // any attempt of the job
  EXPECT_EQ(woken, 2);
  store_.Unsubscribe(id);
  ASSERT_TRUE(store_.Append(task, 2, "c\n").ok());
  EXPECT_EQ(woken, 2);
  EXPECT_EQ(other_job, 0);
}

TEST_F(LogStoreTest, ACallbackMayUnsubscribeItselfAndOthers) {
  std::vector<std::string> calls;
  LogStore::SubscriptionId first = 0, second = 0;
  first = store_.Subscribe(3, [&] {
    calls.push_back("first");
    store_.Unsubscribe(first);
    store_.Unsubscribe(second);
  });
  second = store_.Subscribe(3, [&] { calls.push_back("second"); });
  store_.Subscribe(3, [&] { calls.push_back("third"); });
  ASSERT_TRUE(store_.Append({3, 1, "worker", 0}, 0, "a").ok());
  ASSERT_TRUE(store_.Append({3, 1, "worker", 0}, 1, "b").ok());
  EXPECT_THAT(calls, ElementsAre("first", "third", "third"));
}

// Tests run as root, where permissions stop no write. A log that is a link to /dev/full fails
// at write() with ENOSPC for anyone, which exercises the real write path without a test hook.
TEST_F(LogStoreTest, AFailedWriteIsAnErrorAndWakesNobody) {
  TaskId task{3, 1, "worker", 0};
  fs::create_directories(dir_ / "3" / "1");
  fs::create_symlink("/dev/full", dir_ / "3" / "1" / "worker.0.log");
  int woken = 0;
  store_.Subscribe(3, [&] { ++woken; });
  auto written = store_.Append(task, 0, "hello\n");
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.status().code(), StatusCode::kInternal);
  EXPECT_THAT(written.status().message(), HasSubstr("writing"));
  EXPECT_EQ(woken, 0);
}

// A regular file where the job's directory belongs: creating the log fails, for root too.
TEST_F(LogStoreTest, AnUncreatableLogIsAnError) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "3") << "in the way";
  auto written = store_.Append({3, 1, "worker", 0}, 0, "hello\n");
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace cohort::master
