// The task log store on a real directory: idempotent appends, gaps, reads, listing, the cap
// with its rotation and markers, what survives a restart, and the wake-ups that followers wait
// for.
#include "master/log_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

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

  static std::string FileText(const fs::path& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  // Every byte a reader gets from `offset` on, with a "<dropped N>" wherever bytes are gone,
  // read in pieces of `piece` bytes.
  static std::string ReadAll(const LogStore& store, const TaskId& task, int64_t offset = 0,
                             size_t piece = 7) {
    std::string all;
    while (true) {
      auto chunk = store.Read(task, offset, piece);
      EXPECT_TRUE(chunk.ok()) << chunk.status().ToString();
      if (!chunk.ok() || chunk->next == offset) return all;
      if (chunk->dropped > 0) all += "<dropped " + std::to_string(chunk->dropped) + ">";
      all += chunk->data;
      offset = chunk->next;
    }
  }
  // The stored bytes of the task's log, from its files.
  int64_t BytesOnDisk(const TaskId& task) const {
    int64_t total = 0;
    fs::path dir = dir_ / std::to_string(task.job) / std::to_string(task.attempt) /
                   (task.role + "." + std::to_string(task.index));
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".log") total += static_cast<int64_t>(e.file_size());
    }
    return total;
  }

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
  EXPECT_FALSE(fs::exists(dir_ / "3" / "1" / "worker.1"));
  EXPECT_EQ(*store_.Size(task), 12);
  EXPECT_EQ(FileText(dir_ / "3" / "1" / "worker.0" / "00000000000000000000.log"), "hello\nworld\n");
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
  EXPECT_EQ(store_.Read(task, 0, 10)->data, "");  // no log yet
  ASSERT_TRUE(store_.Append(task, 0, "0123456789abcdef").ok());
  auto chunk = store_.Read(task, 0, 4);
  EXPECT_EQ(chunk->data, "0123");
  EXPECT_EQ(chunk->next, 4);
  EXPECT_EQ(chunk->size, 16);
  EXPECT_EQ(chunk->dropped, 0);
  EXPECT_EQ(store_.Read(task, 10, 100)->data, "abcdef");
  EXPECT_EQ(store_.Read(task, 16, 100)->data, "");
  EXPECT_EQ(store_.Read(task, 16, 100)->next, 16);
  EXPECT_EQ(store_.Read(task, 99, 100)->data, "");
  EXPECT_EQ(store_.Read(task, 3, 0)->data, "");
}

TEST_F(LogStoreTest, ListsTheTasksOfOneAttemptSorted) {
  EXPECT_TRUE(store_.TasksWithLogs(3, 1)->empty());
  for (const TaskId& t : std::vector<TaskId>{
           {3, 1, "worker", 10}, {3, 1, "worker", 2}, {3, 1, "chief", 0}, {3, 2, "worker", 0}}) {
    ASSERT_TRUE(store_.Append(t, 0, "x").ok());
  }
  std::ofstream(dir_ / "3" / "1" / "notes.txt") << "not a log";
  std::ofstream(dir_ / "3" / "1" / "worker.7.log") << "an older master's log";
  EXPECT_THAT(*store_.TasksWithLogs(3, 1),
              ElementsAre(TaskId{3, 1, "chief", 0}, TaskId{3, 1, "worker", 2},
                          TaskId{3, 1, "worker", 7}, TaskId{3, 1, "worker", 10}));
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
  fs::create_directories(dir_ / "3" / "1" / "worker.0");
  fs::create_symlink("/dev/full", dir_ / "3" / "1" / "worker.0" / "00000000000000000000.log");
  int woken = 0;
  store_.Subscribe(3, [&] { ++woken; });
  auto written = store_.Append(task, 0, "hello\n");
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.status().code(), StatusCode::kResourceExhausted) << "a full disk: 507";
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

TEST(LogLimitsTest, SegmentsAreAnEighthOfTheLimitUpTo32MiB) {
  EXPECT_EQ(LogLimits::For(8 << 20).segment, 1 << 20);
  EXPECT_EQ(LogLimits::For(int64_t{1} << 30).segment, 32 << 20);
  EXPECT_EQ(LogLimits::For(4).segment, 1);
  EXPECT_EQ(LogLimits{}.per_task, 256 << 20);
}

TEST(DroppedMarkerTest, SaysHowMuchAndWhy) {
  EXPECT_EQ(DroppedMarker(1'288'490'189, 256 << 20),
            "[cohort: 1.2GiB of earlier output dropped (log limit 256MiB)]");
  EXPECT_EQ(DroppedMarker(17, 1000),
            "[cohort: 17 bytes of earlier output dropped (log limit 1000 bytes)]");
}

// A limit of 100 bytes in segments of 30: appends of any size keep the most recent output, at
// most the limit, and what rotated away reads as one gap before the rest.
TEST_F(LogStoreTest, KeepsTheMostRecentOutputWithinTheLimit) {
  LogStore store(dir_.string(), LogLimits{100, 30});
  TaskId task{3, 1, "worker", 0};
  std::string all;
  for (int i = 0; i < 40; ++i) {
    std::string line = "line " + std::to_string(i) + "\n";  // 7 or 8 bytes
    ASSERT_EQ(*store.Append(task, static_cast<int64_t>(all.size()), line),
              static_cast<int64_t>(all.size() + line.size()));
    all += line;
    LogInfo info = *store.Info(task);
    EXPECT_EQ(info.size, static_cast<int64_t>(all.size()));
    EXPECT_LE(info.stored, 100);
    EXPECT_EQ(BytesOnDisk(task), info.stored);
  }
  LogInfo info = *store.Info(task);
  EXPECT_GT(info.stored, 100 - 30);
  EXPECT_EQ(info.dropped(), static_cast<int64_t>(all.size()) - info.stored);
  EXPECT_EQ(ReadAll(store, task),
            "<dropped " + std::to_string(info.dropped()) + ">" + all.substr(info.dropped()));
  // A reader already past the gap reads on; one inside it skips what remains of it.
  EXPECT_EQ(ReadAll(store, task, info.dropped() + 3), all.substr(info.dropped() + 3));
  EXPECT_EQ(ReadAll(store, task, 5),
            "<dropped " + std::to_string(info.dropped() - 5) + ">" + all.substr(info.dropped()));
  // One append bigger than the limit still leaves at most the limit, from its end.
  std::string big(250, 'b');
  ASSERT_TRUE(store.Append(task, static_cast<int64_t>(all.size()), big).ok());
  info = *store.Info(task);
  EXPECT_LE(info.stored, 100);
  EXPECT_EQ(ReadAll(store, task).substr(ReadAll(store, task).find('>') + 1),
            std::string(static_cast<size_t>(info.stored), 'b'));
}

TEST_F(LogStoreTest, ResendsAcrossSegmentsAreIdempotent) {
  LogStore store(dir_.string(), LogLimits{1000, 4});
  TaskId task{3, 1, "worker", 0};
  ASSERT_EQ(*store.Append(task, 0, "abcdefghij"), 10);  // three segments
  ASSERT_EQ(*store.Append(task, 2, "cdefghijklmn"), 14);
  ASSERT_EQ(*store.Append(task, 0, "abc"), 14);
  EXPECT_EQ(ReadAll(store, task, 0, 100), "abcdefghijklmn");
  EXPECT_EQ(store.Read(task, 0, 100)->data, "abcd") << "a read stays within one segment";
}

// An agent that fell behind skips ahead: the gap is recorded as dropped, and only an upload
// that says so may leave one.
TEST_F(LogStoreTest, ASkipRecordsTheGapAsDropped) {
  LogStore store(dir_.string(), LogLimits{1000, 100});
  TaskId task{3, 1, "worker", 0};
  ASSERT_TRUE(store.Append(task, 0, "early\n").ok());
  EXPECT_EQ(store.Append(task, 500, "late\n").status().code(), StatusCode::kFailedPrecondition);
  ASSERT_EQ(*store.Append(task, 500, "late\n", LogAppend{.skip = true, .end = {}}), 505);
  ASSERT_EQ(*store.Append(task, 500, "late\n", LogAppend{.skip = true, .end = {}}),
            505);  // a resend
  LogInfo info = *store.Info(task);
  EXPECT_EQ(info.stored, 11);
  EXPECT_EQ(info.dropped(), 494);
  EXPECT_EQ(ReadAll(store, task), "early\n<dropped 494>late\n");
  // A log whose first bytes were skipped starts with the gap.
  TaskId other{3, 1, "worker", 1};
  ASSERT_EQ(*store.Append(other, 1 << 20, "tail", LogAppend{.skip = true, .end = {}}),
            (1 << 20) + 4);
  EXPECT_EQ(ReadAll(store, other), "<dropped 1048576>tail");
  // A skip with nothing to store stores nothing.
  ASSERT_EQ(*store.Append(other, 5 << 20, "", LogAppend{.skip = true, .end = {}}), (1 << 20) + 4);
}

// The agent announces the task's end with its size; the log is complete once it holds it all.
TEST_F(LogStoreTest, RecordsTheAnnouncedEnd) {
  TaskId task{3, 1, "worker", 0};
  int woken = 0;
  store_.Subscribe(3, [&] { ++woken; });
  ASSERT_TRUE(store_.Append(task, 0, "abc").ok());
  EXPECT_FALSE(store_.Info(task)->end.has_value());
  ASSERT_TRUE(store_.Append(task, 3, "def", LogAppend{.end = 10}).ok());
  EXPECT_EQ(woken, 2);
  LogInfo info = *store_.Info(task);
  EXPECT_EQ(info.end, 10);
  EXPECT_FALSE(info.complete());
  ASSERT_TRUE(store_.Append(task, 0, "", LogAppend{.end = 10}).ok());
  EXPECT_EQ(woken, 2) << "the same end again changes nothing";
  ASSERT_TRUE(store_.Append(task, 6, "ghij", LogAppend{.end = 10}).ok());
  EXPECT_TRUE(store_.Info(task)->complete());
  EXPECT_EQ(store_.Append(task, 0, "", LogAppend{.end = -1}).status().code(),
            StatusCode::kInvalidArgument);
  // A task that ended without output has nothing to wait for.
  TaskId silent{3, 1, "worker", 1};
  ASSERT_TRUE(store_.Append(silent, 0, "", LogAppend{.end = 0}).ok());
  EXPECT_FALSE(store_.Info(silent)->end.has_value());
}

// Everything follows from the files: a new store on the same directory (a restarted master)
// sees the same kept range, the same dropped count, the same end, and goes on from there.
TEST_F(LogStoreTest, WhatIsKeptAndDroppedSurvivesARestart) {
  TaskId task{3, 1, "worker", 0};
  std::string all;
  {
    LogStore store(dir_.string(), LogLimits{100, 30});
    for (int i = 0; i < 30; ++i) {
      std::string line = "line " + std::to_string(i) + "\n";
      ASSERT_TRUE(store.Append(task, static_cast<int64_t>(all.size()), line).ok());
      all += line;
    }
    ASSERT_TRUE(
        store.Append(task, 1000, "after a skip\n", LogAppend{.skip = true, .end = 2000}).ok());
  }
  LogStore again(dir_.string(), LogLimits{100, 30});
  LogInfo info = *again.Info(task);
  EXPECT_EQ(info.size, 1013);
  EXPECT_EQ(info.end, 2000);
  EXPECT_LE(info.stored, 100);
  std::string read = ReadAll(again, task);
  EXPECT_THAT(read, ::testing::StartsWith("<dropped "));
  EXPECT_THAT(read, ::testing::EndsWith("<dropped " + std::to_string(1000 - all.size()) +
                                        ">after a skip\n"));
  ASSERT_EQ(*again.Append(task, 1013, "more\n"), 1018);
  EXPECT_EQ(again.Append(task, 2000, "x").status().code(), StatusCode::kFailedPrecondition);
}

// A log written by an older master (one file per task) is read as the segment at offset 0.
TEST_F(LogStoreTest, TakesOverTheLogOfAnOlderMaster) {
  fs::create_directories(dir_ / "3" / "1");
  std::ofstream(dir_ / "3" / "1" / "worker.0.log") << "old line\n";
  TaskId task{3, 1, "worker", 0};
  EXPECT_EQ(*store_.Size(task), 9);
  ASSERT_EQ(*store_.Append(task, 9, "new line\n"), 18);
  EXPECT_EQ(ReadAll(store_, task, 0, 100), "old line\nnew line\n");
  EXPECT_FALSE(fs::exists(dir_ / "3" / "1" / "worker.0.log"));
  EXPECT_THAT(*store_.TasksWithLogs(3, 1), ElementsAre(task));
}

// Completions that a writer thread posts, run by the test when it says so: the event loop.
class PostedWork {
 public:
  LogStore::Post post() {
    return [this](std::function<void()> work) {
      std::lock_guard lock(mu_);
      work_.push_back(std::move(work));
      cv_.notify_all();
    };
  }
  // Waits until `n` completions are posted (or 10 s), then runs them.
  size_t RunWhenPosted(size_t n) {
    std::vector<std::function<void()>> run;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::seconds(10), [&] { return work_.size() >= n; });
      run.swap(work_);
    }
    for (auto& w : run) w();
    return run.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::function<void()>> work_;
};

TEST_F(LogStoreTest, WithoutAWriterAppendAsyncAppendsAtOnce) {
  std::optional<StatusOr<int64_t>> result;
  store_.AppendAsync({3, 1, "worker", 0}, 0, "hi\n", {},
                     [&](StatusOr<int64_t> size) { result = std::move(size); });
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(**result, 3);
}

// With a writer, the caller's thread only queues: the bytes are written elsewhere, and the
// subscribers and the answer come through the posted completion, in that order.
TEST_F(LogStoreTest, AWriterAppendsElsewhereAndAnswersOnTheLoop) {
  PostedWork loop;
  store_.StartWriter(loop.post());
  TaskId task{3, 1, "worker", 0};
  std::vector<std::string> events;
  store_.Subscribe(3, [&] { events.push_back("woken"); });
  std::vector<int64_t> sizes;
  int64_t offset = 0;
  for (const char* line : {"a\n", "b\n", "c\n"}) {
    store_.AppendAsync(task, offset, line, {}, [&](StatusOr<int64_t> size) {
      events.push_back("done");
      sizes.push_back(size.ok() ? *size : -1);
    });
    offset += 2;
  }
  store_.AppendAsync(task, 100, "gap", {}, [&](StatusOr<int64_t> size) {
    events.push_back(size.status().code() == StatusCode::kFailedPrecondition ? "refused" : "?");
  });
  EXPECT_TRUE(events.empty()) << "nothing is answered inside AppendAsync";
  EXPECT_EQ(loop.RunWhenPosted(4), 4u);
  EXPECT_THAT(events, ElementsAre("woken", "done", "woken", "done", "woken", "done", "refused"));
  EXPECT_THAT(sizes, ElementsAre(2, 4, 6));
  EXPECT_EQ(ReadAll(store_, task), "a\nb\nc\n");
  store_.StopWriter();
  std::optional<StatusOr<int64_t>> inline_result;
  store_.AppendAsync(task, 6, "d\n", {},
                     [&](StatusOr<int64_t> size) { inline_result = std::move(size); });
  ASSERT_TRUE(inline_result.has_value()) << "stopped: at once again";
  EXPECT_EQ(**inline_result, 8);
}

// Readers on the loop while the writer appends and rotates: every byte read is the byte
// written at that offset, and a segment deleted under a reader counts as dropped.
TEST_F(LogStoreTest, ReadersSeeAConsistentLogWhileTheWriterRotates) {
  LogStore store(dir_.string(), LogLimits{4000, 500});
  PostedWork loop;
  store.StartWriter(loop.post());
  TaskId task{3, 1, "worker", 0};
  auto byte_at = [](int64_t offset) { return static_cast<char>('a' + offset % 26); };
  constexpr int kAppends = 400;
  constexpr int64_t kChunk = 97;
  for (int i = 0; i < kAppends; ++i) {
    std::string data;
    for (int64_t o = i * kChunk; o < (i + 1) * kChunk; ++o) data += byte_at(o);
    store.AppendAsync(task, i * kChunk, std::move(data), {}, [](StatusOr<int64_t> size) {
      EXPECT_TRUE(size.ok()) << size.status().ToString();
    });
  }
  int64_t offset = 0;
  int64_t dropped = 0;
  int64_t read = 0;
  size_t answered = 0;
  while (offset < kAppends * kChunk) {
    auto chunk = store.Read(task, offset, 300);
    ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
    dropped += chunk->dropped;
    read += static_cast<int64_t>(chunk->data.size());
    for (size_t i = 0; i < chunk->data.size(); ++i) {
      ASSERT_EQ(chunk->data[i], byte_at(offset + chunk->dropped + static_cast<int64_t>(i)))
          << "at " << offset + chunk->dropped + static_cast<int64_t>(i);
    }
    offset = chunk->next;
    // A reader that starts over lands in the oldest segment, the next to be deleted.
    auto oldest = store.Read(task, 0, 300);
    ASSERT_TRUE(oldest.ok()) << oldest.status().ToString();
    for (size_t i = 0; i < oldest->data.size(); ++i) {
      ASSERT_EQ(oldest->data[i], byte_at(oldest->dropped + static_cast<int64_t>(i)));
    }
    answered += loop.RunWhenPosted(0);
  }
  store.StopWriter();
  answered += loop.RunWhenPosted(0);
  EXPECT_EQ(answered, static_cast<size_t>(kAppends));
  EXPECT_LE(store.Info(task)->stored, 4000);
  EXPECT_EQ(dropped + read, kAppends * kChunk) << "every byte was read or counted as dropped";
}

}  // namespace
}  // namespace cohort::master
