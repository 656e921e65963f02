#include "metrics/event_file_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <charconv>
#include <random>
#include <string>
#include <vector>

#include "common/strings.h"
#include "metrics/event_test_writer.h"
#include "metrics/tensorboard_event.pb.h"
#include "metrics/tfrecord_reader.h"

namespace cohort::metrics {
namespace {

namespace fs = std::filesystem;
namespace tb = cohort::metrics::tensorboard;
using testing::AppendToFile;
using testing::Framed;
using testing::ReadWholeFile;
using testing::SimpleValueEvent;
using testing::TempDir;
using testing::WriteWholeFile;

// Reads until the reader has nothing more, with a generous budget.
MetricBatch ReadAll(EventFileReader& reader, uint64_t max_bytes = 1 << 20) {
  MetricBatch all;
  while (true) {
    EventFileReader::Read read = reader.ReadNew(max_bytes);
    all.points.insert(all.points.end(), read.batch.points.begin(), read.batch.points.end());
    all.problems.insert(all.problems.end(), read.batch.problems.begin(), read.batch.problems.end());
    if (!read.more) return all;
  }
}

void ExpectTheTf2Fixture(const std::vector<MetricPoint>& points) {
  ASSERT_EQ(points.size(), 100u);
  for (int step = 0; step < 100; ++step) {
    const MetricPoint& p = points[step];
    EXPECT_EQ(p.tag, "my_metric");
    EXPECT_EQ(p.step, step);
    EXPECT_EQ(p.value, 0.5 * step);
    EXPECT_GT(p.wall_time, 1585499054.0);  // the file's name holds when it was made
    EXPECT_LT(p.wall_time, 1585499055.0);
  }
}

std::string Tf2Fixture() {
  fs::path path = testing::SharedTf2Fixture();
  EXPECT_TRUE(fs::exists(path)) << path << " is missing: ../shared comes with every checkout";
  return ReadWholeFile(path);
}

TEST(EventFileReader, ReadsTheTensorFlow2Fixture) {
  fs::path path = testing::SharedTf2Fixture();
  ASSERT_TRUE(fs::exists(path)) << path << " is missing: ../shared comes with every checkout";
  EventFileReader reader(path, "tf2", "train");
  MetricBatch batch = ReadAll(reader);
  EXPECT_TRUE(batch.problems.empty());
  ExpectTheTf2Fixture(batch.points);
  for (const MetricPoint& p : batch.points) EXPECT_EQ(p.run, "train");
  EXPECT_EQ(reader.offset(), fs::file_size(path));
  EXPECT_TRUE(ReadAll(reader).points.empty());  // nothing new
}

TEST(EventFileReader, ReadsAGrowingFileWhateverTheWritesLookLike) {
  const std::string whole = Tf2Fixture();
  ASSERT_FALSE(whole.empty());
  std::mt19937 rng(7);
  for (size_t max_piece : {size_t{1}, size_t{5}, size_t{40}, size_t{700}}) {
    SCOPED_TRACE(max_piece);
    TempDir dir;
    fs::path path = dir.path() / "events.out.tfevents.1";
    WriteWholeFile(path, "");
    EventFileReader reader(path, "f", "");
    MetricBatch all;
    for (size_t at = 0; at < whole.size();) {
      size_t piece = std::uniform_int_distribution<size_t>(1, max_piece)(rng);
      piece = std::min(piece, whole.size() - at);
      AppendToFile(path, std::string_view(whole).substr(at, piece));
      at += piece;
      MetricBatch got = ReadAll(reader);
      all.points.insert(all.points.end(), got.points.begin(), got.points.end());
      all.problems.insert(all.problems.end(), got.problems.begin(), got.problems.end());
    }
    EXPECT_TRUE(all.problems.empty());
    ExpectTheTf2Fixture(all.points);
  }
}

TEST(EventFileReader, ReadsTheWholePrefixOfATruncatedFileThenTheRest) {
  const std::string whole = Tf2Fixture();
  TempDir dir;
  fs::path path = dir.path() / "events.out.tfevents.1";
  const size_t cut = whole.size() / 2 + 3;  // inside a record
  WriteWholeFile(path, std::string_view(whole).substr(0, cut));
  EventFileReader reader(path, "f", "");
  MetricBatch first = ReadAll(reader);
  EXPECT_TRUE(first.problems.empty());
  ASSERT_GT(first.points.size(), 40u);
  ASSERT_LT(first.points.size(), 60u);
  EXPECT_LT(reader.offset(), cut);  // at the start of the cut record
  AppendToFile(path, std::string_view(whole).substr(cut));
  MetricBatch rest = ReadAll(reader);
  EXPECT_TRUE(rest.problems.empty());
  first.points.insert(first.points.end(), rest.points.begin(), rest.points.end());
  ExpectTheTf2Fixture(first.points);
}

TEST(EventFileReader, ACorruptedByteInOneRecordLosesThatRecordOnly) {
  std::string bytes = Tf2Fixture();
  // The tenth record's data: the file_version record, then the points of step 0..8, then step 9.
  size_t offset = 0;
  for (int i = 0; i < 10; ++i) {
    offset += 16 + bytes[offset];  // every record here is shorter than 256 bytes
  }
  bytes[offset + kRecordHeaderBytes + 5] ^= 0x20;
  TempDir dir;
  fs::path path = dir.path() / "events.out.tfevents.1";
  WriteWholeFile(path, bytes);
  EventFileReader reader(path, "f", "");
  MetricBatch batch = ReadAll(reader);
  ASSERT_EQ(batch.problems.size(), 1u);
  EXPECT_EQ(batch.problems[0].offset, offset);
  EXPECT_EQ(batch.problems[0].file, "f");
  ASSERT_EQ(batch.points.size(), 99u);
  for (const MetricPoint& p : batch.points) EXPECT_NE(p.step, 9);
}

TEST(EventFileReader, ACorruptedLengthStopsTheFileAndIsReportedOnce) {
  std::string good = Framed({SimpleValueEvent(1, 1, "loss", 1), SimpleValueEvent(2, 2, "loss", 2)});
  std::string bad = Framed({SimpleValueEvent(3, 3, "loss", 3)});
  bad[3] ^= 0x40;
  TempDir dir;
  fs::path path = dir.path() / "events.out.tfevents.1";
  WriteWholeFile(path, good + bad + Framed({SimpleValueEvent(4, 4, "loss", 4)}));
  EventFileReader reader(path, "f", "");
  MetricBatch batch = ReadAll(reader);
  EXPECT_EQ(batch.points.size(), 2u);
  ASSERT_EQ(batch.problems.size(), 1u);
  EXPECT_EQ(batch.problems[0].offset, good.size());
  EXPECT_EQ(reader.offset(), good.size());
  // Nothing new is said while it stays so, even as the file grows.
  EXPECT_TRUE(ReadAll(reader).problems.empty());
  AppendToFile(path, Framed({SimpleValueEvent(5, 5, "loss", 5)}));
  MetricBatch later = ReadAll(reader);
  EXPECT_TRUE(later.problems.empty());
  EXPECT_TRUE(later.points.empty());
}

TEST(EventFileReader, ALengthThatHealsIsReadOnceTheFileChanges) {
  // What a network file system can show: the file extended with zeros before its data lands.
  std::string first = Framed({SimpleValueEvent(1, 1, "loss", 1)});
  std::string second = Framed({SimpleValueEvent(2, 2, "loss", 2)});
  TempDir dir;
  fs::path path = dir.path() / "events.out.tfevents.1";
  WriteWholeFile(path, first + std::string(second.size(), '\0'));
  EventFileReader reader(path, "f", "");
  MetricBatch before = ReadAll(reader);
  EXPECT_EQ(before.points.size(), 1u);
  EXPECT_EQ(before.problems.size(), 1u);
  WriteWholeFile(path, first + second + Framed({SimpleValueEvent(3, 3, "loss", 3)}));
  MetricBatch after = ReadAll(reader);
  EXPECT_TRUE(after.problems.empty());
  ASSERT_EQ(after.points.size(), 2u);
  EXPECT_EQ(after.points[0].step, 2);
}

TEST(EventFileReader, AGarbageFileIsOneProblem) {
  TempDir dir;
  fs::path path = dir.path() / "events.out.tfevents.garbage";
  WriteWholeFile(path, std::string(5000, 'z'));
  EventFileReader reader(path, "f", "");
  MetricBatch batch = ReadAll(reader);
  EXPECT_TRUE(batch.points.empty());
  EXPECT_EQ(batch.problems.size(), 1u);
  EXPECT_TRUE(ReadAll(reader).problems.empty());
}

TEST(EventFileReader, AnEmptyFileOrNoFileIsNothing) {
  TempDir dir;
  fs::path path = dir.path() / "events.out.tfevents.1";
  EventFileReader missing(path, "f", "");
  MetricBatch none = ReadAll(missing);
  EXPECT_TRUE(none.points.empty());
  EXPECT_TRUE(none.problems.empty());
  WriteWholeFile(path, "");
  EventFileReader empty(path, "f", "");
  MetricBatch batch = ReadAll(empty);
  EXPECT_TRUE(batch.points.empty());
  EXPECT_TRUE(batch.problems.empty());
}

TEST(EventFileReader, AFileThatShrinksIsReadAgainFromTheStart) {
  TempDir dir;
  fs::path path = dir.path() / "events.out.tfevents.1";
  WriteWholeFile(path, Framed({SimpleValueEvent(1, 1, "a", 1), SimpleValueEvent(2, 2, "a", 2)}));
  EventFileReader reader(path, "f", "");
  EXPECT_EQ(ReadAll(reader).points.size(), 2u);
  WriteWholeFile(path, Framed({SimpleValueEvent(7, 7, "b", 7)}));  // same inode, shorter
  MetricBatch again = ReadAll(reader);
  ASSERT_EQ(again.problems.size(), 1u);
  EXPECT_NE(again.problems[0].what.find("shrank"), std::string::npos);
  ASSERT_EQ(again.points.size(), 1u);
  EXPECT_EQ(again.points[0].tag, "b");
}

TEST(EventFileReader, AFileReplacedByAnotherIsReadFromTheStart) {
  TempDir dir;
  fs::path path = dir.path() / "events.out.tfevents.1";
  WriteWholeFile(path, Framed({SimpleValueEvent(1, 1, "a", 1)}));
  EventFileReader reader(path, "f", "");
  EXPECT_EQ(ReadAll(reader).points.size(), 1u);
  fs::path other = dir.path() / "other";
  WriteWholeFile(other, Framed({SimpleValueEvent(1, 1, "b", 1), SimpleValueEvent(2, 2, "b", 2)}));
  fs::rename(other, path);
  MetricBatch again = ReadAll(reader);
  ASSERT_EQ(again.problems.size(), 1u);
  EXPECT_NE(again.problems[0].what.find("replaced"), std::string::npos);
  EXPECT_EQ(again.points.size(), 2u);
}

TEST(EventFileReader, AHugeClaimedLengthIsReportedAndSkipped) {
  std::string first = Framed({SimpleValueEvent(1, 1, "a", 1)});
  const uint64_t huge = uint64_t{1} << 40;
  TempDir dir;
  fs::path path = dir.path() / "events.out.tfevents.1";
  WriteWholeFile(path, first + testing::RecordHeader(huge) + "the start of it");
  EventFileReader reader(path, "f", "");
  MetricBatch batch = ReadAll(reader);
  EXPECT_EQ(batch.points.size(), 1u);
  ASSERT_EQ(batch.problems.size(), 1u);
  EXPECT_EQ(batch.problems[0].offset, first.size());
  EXPECT_NE(batch.problems[0].what.find("over the limit"), std::string::npos);
  EXPECT_EQ(reader.offset(), first.size() + 16 + huge);
  AppendToFile(path, std::string(10000, 'x'));  // more of that record: not read, not a problem
  MetricBatch later = ReadAll(reader);
  EXPECT_TRUE(later.points.empty());
  EXPECT_TRUE(later.problems.empty());
}

TEST(EventFileReader, BigRecordsAreReadWholeWhateverTheBudget) {
  std::string payload(300'000, 'p');  // a big event that holds no scalar
  tb::Event big;
  big.set_step(1);
  auto* v = big.mutable_summary()->add_value();
  v->set_tag("image");
  v->mutable_tensor()->set_tensor_content(payload);
  TempDir dir;
  fs::path path = dir.path() / "events.out.tfevents.1";
  WriteWholeFile(path, Framed({big.SerializeAsString(), SimpleValueEvent(2, 2, "loss", 3)}));
  EventFileReader reader(path, "f", "");
  MetricBatch batch = ReadAll(reader, 1000);
  EXPECT_TRUE(batch.problems.empty());
  ASSERT_EQ(batch.points.size(), 1u);
  EXPECT_EQ(batch.points[0].value, 3);
}

TEST(EventFileReader, TheBudgetBoundsEachRead) {
  std::string whole = Tf2Fixture();
  TempDir dir;
  fs::path path = dir.path() / "events.out.tfevents.1";
  WriteWholeFile(path, whole);
  EventFileReader reader(path, "f", "");
  EventFileReader::Read first = reader.ReadNew(1000);
  EXPECT_TRUE(first.more);
  EXPECT_LE(first.bytes_read, 1000u);
  EXPECT_LT(first.batch.points.size(), 100u);
  MetricBatch rest = ReadAll(reader, 1000);
  first.batch.points.insert(first.batch.points.end(), rest.points.begin(), rest.points.end());
  ExpectTheTf2Fixture(first.batch.points);
}

TEST(EventFileReader, DoesNotFollowSymbolicLinks) {
  TempDir dir;
  fs::path target = dir.path() / "elsewhere";
  WriteWholeFile(target, Framed({SimpleValueEvent(1, 1, "secret", 1)}));
  fs::path link = dir.path() / "events.out.tfevents.1";
  fs::create_symlink(target, link);
  EventFileReader reader(link, "f", "");
  MetricBatch batch = ReadAll(reader);
  EXPECT_TRUE(batch.points.empty());
  EXPECT_EQ(batch.problems.size(), 1u);  // cannot open: too many levels of symbolic links
}

// A real file from PyTorch's SummaryWriter (simple_value scalars);
// tests/fixtures/tfevents/README.md says where it comes from, and its .expected.csv lists what an
// independent decoder found in it.
TEST(EventFileReader, ReadsAPyTorchSummaryWriterFile) {
  fs::path fixtures(COHORT_METRICS_FIXTURES);
  fs::path path = fixtures / "events.out.tfevents.1622543341.host.86862.0";
  EventFileReader reader(path, "pytorch", "run_1");
  MetricBatch batch = ReadAll(reader);
  EXPECT_TRUE(batch.problems.empty());
  std::vector<std::string> lines = Split(
      ReadWholeFile(fixtures / "events.out.tfevents.1622543341.host.86862.0.expected.csv"), '\n');
  std::vector<MetricPoint> expected;
  for (size_t i = 1; i < lines.size(); ++i) {  // after the header
    if (lines[i].empty()) continue;
    std::vector<std::string> f = Split(lines[i], ',');
    ASSERT_EQ(f.size(), 3u);
    MetricPoint p{"run_1", "strict/foo", 0, 0, 0};
    std::from_chars(f[0].data(), f[0].data() + f[0].size(), p.step);
    std::from_chars(f[1].data(), f[1].data() + f[1].size(), p.wall_time);
    std::from_chars(f[2].data(), f[2].data() + f[2].size(), p.value);
    expected.push_back(p);
  }
  ASSERT_EQ(expected.size(), 100u);
  EXPECT_EQ(batch.points, expected);
}

}  // namespace
}  // namespace cohort::metrics
