#include "metrics/event_directory_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "metrics/event_test_writer.h"

namespace cohort::metrics {
namespace {

namespace fs = std::filesystem;
using testing::AppendToFile;
using testing::Framed;
using testing::SimpleValueEvent;
using testing::TempDir;
using testing::WriteWholeFile;

std::string Events(const std::string& tag, int from, int to) {
  std::string out;
  for (int step = from; step < to; ++step) out += Framed({SimpleValueEvent(step, step, tag, 1)});
  return out;
}

// run -> tag -> steps
using Seen = std::map<std::string, std::map<std::string, std::set<int64_t>>>;
void Add(Seen& seen, const std::vector<MetricPoint>& points) {
  for (const MetricPoint& p : points) seen[p.run][p.tag].insert(p.step);
}

TEST(EventDirectoryReader, ReadsEveryEventFileAtAnyDepthAsARun) {
  TempDir dir;
  fs::create_directories(dir.path() / "train");
  fs::create_directories(dir.path() / "eval/epoch1");
  WriteWholeFile(dir.path() / "events.out.tfevents.1.host", Events("top", 0, 2));
  WriteWholeFile(dir.path() / "train/events.out.tfevents.2.host", Events("loss", 0, 3));
  WriteWholeFile(dir.path() / "eval/epoch1/events.out.tfevents.3.host.v2", Events("acc", 5, 6));
  WriteWholeFile(dir.path() / "train/notes.txt", Events("ignored", 0, 1));
  EventDirectoryReader reader(dir.path());
  auto poll = reader.Poll();
  EXPECT_TRUE(poll.batch.problems.empty());
  EXPECT_FALSE(poll.more);
  Seen seen;
  Add(seen, poll.batch.points);
  EXPECT_EQ(seen, (Seen{{"", {{"top", {0, 1}}}},
                        {"train", {{"loss", {0, 1, 2}}}},
                        {"eval/epoch1", {{"acc", {5}}}}}));
  EXPECT_EQ(reader.files_tracked(), 3u);
}

TEST(EventDirectoryReader, ReadsOnlyWhatIsNewAndFilesThatAppear) {
  TempDir dir;
  EventDirectoryReader reader(dir.path() / "logs");  // not there yet
  EXPECT_TRUE(reader.Poll().batch.points.empty());
  fs::create_directories(dir.path() / "logs/run_a");
  fs::path a = dir.path() / "logs/run_a/events.out.tfevents.1";
  WriteWholeFile(a, Events("loss", 0, 2));
  EXPECT_EQ(reader.Poll().batch.points.size(), 2u);
  EXPECT_TRUE(reader.Poll().batch.points.empty());
  AppendToFile(a, Events("loss", 2, 3));
  fs::create_directories(dir.path() / "logs/run_b");
  WriteWholeFile(dir.path() / "logs/run_b/events.out.tfevents.2", Events("loss", 0, 1));
  Seen seen;
  Add(seen, reader.Poll().batch.points);
  EXPECT_EQ(seen, (Seen{{"run_a", {{"loss", {2}}}}, {"run_b", {{"loss", {0}}}}}));
}

TEST(EventDirectoryReader, ReadsTheTensorFlow2Fixture) {
  TempDir dir;
  fs::copy_file(testing::SharedTf2Fixture(), dir.path() / testing::SharedTf2Fixture().filename());
  EventDirectoryReader reader(dir.path());
  auto poll = reader.Poll();
  EXPECT_TRUE(poll.batch.problems.empty());
  ASSERT_EQ(poll.batch.points.size(), 100u);
  for (int step = 0; step < 100; ++step) {
    EXPECT_EQ(poll.batch.points[step].tag, "my_metric");
    EXPECT_EQ(poll.batch.points[step].step, step);
    EXPECT_EQ(poll.batch.points[step].value, 0.5 * step);
  }
}

TEST(EventDirectoryReader, AFileThatIsRemovedIsForgotten) {
  TempDir dir;
  fs::path a = dir.path() / "events.out.tfevents.1";
  WriteWholeFile(a, Events("loss", 0, 2));
  EventDirectoryReader reader(dir.path());
  EXPECT_EQ(reader.Poll().batch.points.size(), 2u);
  fs::remove(a);
  EXPECT_TRUE(reader.Poll().batch.problems.empty());
  EXPECT_EQ(reader.files_tracked(), 0u);
  WriteWholeFile(a, Events("loss", 0, 1));  // a new file of the same name: read from the start
  EXPECT_EQ(reader.Poll().batch.points.size(), 1u);
}

TEST(EventDirectoryReader, SharesTheByteBudgetAmongFiles) {
  TempDir dir;
  // One big file and a small one: with a budget smaller than the big one, the small one still
  // gets read by the second poll, and everything by the end.
  WriteWholeFile(dir.path() / "a.tfevents", Events("big", 0, 400));
  WriteWholeFile(dir.path() / "b.tfevents", Events("small", 0, 3));
  EventDirectoryLimits limits;
  limits.max_bytes_per_poll = 4000;
  EventDirectoryReader reader(dir.path(), limits);
  Seen seen;
  auto first = reader.Poll();
  EXPECT_TRUE(first.more);
  Add(seen, first.batch.points);
  EXPECT_FALSE(seen[""].contains("small"));
  Add(seen, reader.Poll().batch.points);
  EXPECT_EQ(seen[""]["small"].size(), 3u);
  for (int i = 0; i < 100; ++i) {
    auto poll = reader.Poll();
    Add(seen, poll.batch.points);
    if (!poll.more) break;
  }
  EXPECT_EQ(seen[""]["big"].size(), 400u);
}

TEST(EventDirectoryReader, TracksAtMostMaxFilesAndSaysSoOnce) {
  TempDir dir;
  for (int i = 0; i < 5; ++i) {
    WriteWholeFile(dir.path() / ("events.out.tfevents." + std::to_string(i)),
                   Events("x", i, i + 1));
  }
  EventDirectoryLimits limits;
  limits.max_files = 3;
  EventDirectoryReader reader(dir.path(), limits);
  auto first = reader.Poll();
  EXPECT_EQ(first.batch.points.size(), 3u);
  ASSERT_EQ(first.batch.problems.size(), 1u);
  EXPECT_NE(first.batch.problems[0].what.find("more than 3 event files"), std::string::npos);
  EXPECT_TRUE(reader.Poll().batch.problems.empty());
  EXPECT_EQ(reader.files_tracked(), 3u);
}

TEST(EventDirectoryReader, SearchesNoDeeperThanTheLimit) {
  TempDir dir;
  fs::create_directories(dir.path() / "a/b/c");
  WriteWholeFile(dir.path() / "a/events.out.tfevents.1", Events("depth1", 0, 1));
  WriteWholeFile(dir.path() / "a/b/events.out.tfevents.2", Events("depth2", 0, 1));
  WriteWholeFile(dir.path() / "a/b/c/events.out.tfevents.3", Events("depth3", 0, 1));
  EventDirectoryLimits limits;
  limits.max_depth = 2;
  EventDirectoryReader reader(dir.path(), limits);
  auto poll = reader.Poll();
  Seen seen;
  Add(seen, poll.batch.points);
  EXPECT_EQ(seen, (Seen{{"a", {{"depth1", {0}}}}, {"a/b", {{"depth2", {0}}}}}));
  ASSERT_EQ(poll.batch.problems.size(), 1u);
  EXPECT_NE(poll.batch.problems[0].what.find("2 levels"), std::string::npos);
}

TEST(EventDirectoryReader, StopsSearchingAfterMaxEntries) {
  TempDir dir;
  for (int i = 0; i < 20; ++i) WriteWholeFile(dir.path() / ("file" + std::to_string(i)), "");
  EventDirectoryLimits limits;
  limits.max_entries_per_poll = 10;
  EventDirectoryReader reader(dir.path(), limits);
  auto poll = reader.Poll();
  ASSERT_EQ(poll.batch.problems.size(), 1u);
  EXPECT_NE(poll.batch.problems[0].what.find("more than 10 entries"), std::string::npos);
}

TEST(EventDirectoryReader, FollowsNoSymbolicLinks) {
  TempDir outside;
  fs::create_directories(outside.path() / "secret");
  WriteWholeFile(outside.path() / "secret/events.out.tfevents.1", Events("secret", 0, 1));
  TempDir dir;
  fs::create_directory_symlink(outside.path() / "secret", dir.path() / "linked_dir");
  fs::create_symlink(outside.path() / "secret/events.out.tfevents.1",
                     dir.path() / "events.out.tfevents.linked");
  EventDirectoryReader reader(dir.path());
  auto poll = reader.Poll();
  EXPECT_TRUE(poll.batch.points.empty());
  EXPECT_TRUE(poll.batch.problems.empty());
  EXPECT_EQ(reader.files_tracked(), 0u);
}

TEST(EventDirectoryReader, ProblemsNameTheFileRelativeToTheRoot) {
  TempDir dir;
  fs::create_directories(dir.path() / "train");
  WriteWholeFile(dir.path() / "train/events.out.tfevents.1", "garbage, not records");
  EventDirectoryReader reader(dir.path());
  auto poll = reader.Poll();
  ASSERT_EQ(poll.batch.problems.size(), 1u);
  EXPECT_EQ(poll.batch.problems[0].file, "train/events.out.tfevents.1");
  EXPECT_EQ(poll.batch.problems[0].offset, 0u);
}

}  // namespace
}  // namespace cohort::metrics
