#include "metrics/tfrecord_reader.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "metrics/event_test_writer.h"
#include "metrics/masked_crc32c.h"

namespace cohort::metrics {
namespace {

uint32_t Unmask(uint32_t masked) {
  uint32_t rot = masked - 0xa282ead8;
  return (rot >> 17) | (rot << 15);
}

TEST(MaskedCrc32c, IsCrc32cMasked) {
  // The standard CRC-32C check value.
  EXPECT_EQ(Unmask(MaskedCrc32c("123456789")), 0xE3069283u);
  EXPECT_EQ(Unmask(MaskedCrc32c("")), 0u);
}

TEST(TfRecordReader, ReadsEveryRecordWithItsOffset) {
  std::string bytes = FrameTfRecord("one") + FrameTfRecord("") + FrameTfRecord("three");
  TfRecordScan scan = ScanTfRecords(bytes, 100, "f");
  ASSERT_EQ(scan.records.size(), 3u);
  EXPECT_EQ(scan.records[0].data, "one");
  EXPECT_EQ(scan.records[0].offset, 100u);
  EXPECT_EQ(scan.records[1].data, "");
  EXPECT_EQ(scan.records[1].offset, 100u + 16 + 3);
  EXPECT_EQ(scan.records[2].data, "three");
  EXPECT_EQ(scan.stop, ScanStop::kEnd);
  EXPECT_EQ(scan.next_offset, 100 + bytes.size());
  EXPECT_TRUE(scan.problems.empty());
}

TEST(TfRecordReader, NothingIsTheEnd) {
  TfRecordScan scan = ScanTfRecords("", 7, "f");
  EXPECT_EQ(scan.stop, ScanStop::kEnd);
  EXPECT_EQ(scan.next_offset, 7u);
}

TEST(TfRecordReader, AHalfWrittenRecordIsLeftForLater) {
  std::string first = FrameTfRecord("first");
  std::string second = FrameTfRecord("second record");
  std::string whole = first + second;
  for (size_t cut = first.size() + 1; cut < whole.size(); ++cut) {
    TfRecordScan scan = ScanTfRecords(std::string_view(whole).substr(0, cut), 0, "f");
    ASSERT_EQ(scan.records.size(), 1u) << cut;
    EXPECT_EQ(scan.stop, ScanStop::kIncomplete);
    EXPECT_EQ(scan.next_offset, first.size());
    size_t have = cut - first.size();
    EXPECT_EQ(scan.bytes_needed, have < kRecordHeaderBytes ? kRecordHeaderBytes : second.size());
    EXPECT_TRUE(scan.problems.empty()) << cut;
  }
}

TEST(TfRecordReader, ABadDataChecksumSkipsThatRecordOnly) {
  std::string bad = FrameTfRecord("damaged");
  bad[kRecordHeaderBytes + 2] ^= 0x01;
  std::string bytes = FrameTfRecord("a") + bad + FrameTfRecord("b");
  TfRecordScan scan = ScanTfRecords(bytes, 0, "events");
  ASSERT_EQ(scan.records.size(), 2u);
  EXPECT_EQ(scan.records[0].data, "a");
  EXPECT_EQ(scan.records[1].data, "b");
  ASSERT_EQ(scan.problems.size(), 1u);
  EXPECT_EQ(scan.problems[0].file, "events");
  EXPECT_EQ(scan.problems[0].offset, 17u);
  EXPECT_NE(scan.problems[0].what.find("data checksum"), std::string::npos);
  EXPECT_EQ(scan.stop, ScanStop::kEnd);
}

TEST(TfRecordReader, ABadLengthChecksumStopsThere) {
  std::string bad = FrameTfRecord("damaged");
  bad[0] ^= 0x01;
  std::string bytes = FrameTfRecord("a") + bad + FrameTfRecord("b");
  TfRecordScan scan = ScanTfRecords(bytes, 0, "f");
  ASSERT_EQ(scan.records.size(), 1u);
  EXPECT_EQ(scan.stop, ScanStop::kBadLength);
  EXPECT_EQ(scan.next_offset, 17u);
  ASSERT_EQ(scan.problems.size(), 1u);
  EXPECT_NE(scan.problems[0].what.find("length checksum"), std::string::npos);
}

TEST(TfRecordReader, GarbageIsABadLength) {
  TfRecordScan scan = ScanTfRecords("this is not a TFRecord file at all\n", 0, "f");
  EXPECT_TRUE(scan.records.empty());
  EXPECT_EQ(scan.stop, ScanStop::kBadLength);
  EXPECT_EQ(scan.problems.size(), 1u);
}

TEST(TfRecordReader, AHugeClaimedLengthIsSkippedNotAllocated) {
  const uint64_t huge = uint64_t{1} << 40;
  TfRecordScan scan =
      ScanTfRecords(FrameTfRecord("a") + testing::RecordHeader(huge) + "some", 0, "f");
  ASSERT_EQ(scan.records.size(), 1u);
  ASSERT_EQ(scan.problems.size(), 1u);
  EXPECT_EQ(scan.problems[0].offset, 17u);
  EXPECT_NE(scan.problems[0].what.find("over the limit"), std::string::npos);
  EXPECT_EQ(scan.stop, ScanStop::kEnd);
  EXPECT_EQ(scan.next_offset, 17 + 16 + huge);  // read on from there once the file has it
}

TEST(TfRecordReader, ARecordJustOverTheLimitIsSkippedAndTheNextRead) {
  std::string big(kMaxRecordBytes + 1, 'x');
  std::string bytes = FrameTfRecord(big) + FrameTfRecord("after");
  TfRecordScan scan = ScanTfRecords(bytes, 0, "f");
  ASSERT_EQ(scan.records.size(), 1u);
  EXPECT_EQ(scan.records[0].data, "after");
  EXPECT_EQ(scan.problems.size(), 1u);
  EXPECT_EQ(scan.next_offset, bytes.size());
}

TEST(TfRecordReader, ALengthPastAnyFileEndIsABadLength) {
  TfRecordScan scan =
      ScanTfRecords(testing::RecordHeader(std::numeric_limits<uint64_t>::max() - 3), 0, "f");
  EXPECT_EQ(scan.stop, ScanStop::kBadLength);
  EXPECT_EQ(scan.problems.size(), 1u);
}

}  // namespace
}  // namespace cohort::metrics
