#include "terminal/terminal_frame.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "terminal/terminal_hello.h"

namespace cohort::terminal {
namespace {

using ::testing::HasSubstr;

TEST(TerminalFrame, RoundTripsWhateverPiecesTheStreamArrivesIn) {
  std::string stream = EncodeFrame(FrameType::kInput, "ls -l\r") +
                       EncodeFrame(FrameType::kResize, "120 40") +
                       EncodeFrame(FrameType::kOutput, std::string(70000 % kMaxFramePayload, 'x')) +
                       EncodeFrame(FrameType::kExit, "0");
  FrameReader reader;
  std::vector<Frame> frames;
  for (char c : stream) {  // one byte at a time: the worst a socket can do
    reader.Append(std::string_view(&c, 1));
    while (auto f = reader.Next()) frames.push_back(*f);
  }
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_EQ(frames[0], (Frame{FrameType::kInput, "ls -l\r"}));
  EXPECT_EQ(frames[1], (Frame{FrameType::kResize, "120 40"}));
  EXPECT_EQ(frames[2].payload.size(), 70000 % kMaxFramePayload);
  EXPECT_EQ(frames[3], (Frame{FrameType::kExit, "0"}));
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(TerminalFrame, AnEmptyPayloadIsAFrame) {
  FrameReader reader;
  reader.Append(EncodeFrame(FrameType::kInput, ""));
  auto f = reader.Next();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->payload, "");
}

TEST(TerminalFrame, AnUnknownTypeBreaksTheStreamForGood) {
  FrameReader reader;
  std::string bad = EncodeFrame(FrameType::kInput, "x");
  bad[0] = 'Z';
  reader.Append(bad + EncodeFrame(FrameType::kInput, "y"));
  std::string error;
  EXPECT_FALSE(reader.Next(&error).has_value());
  EXPECT_THAT(error, HasSubstr("unknown type 90"));
  error.clear();
  EXPECT_FALSE(reader.Next(&error).has_value());
  EXPECT_THAT(error, HasSubstr("not terminal frames"));
}

TEST(TerminalFrame, ALengthOverTheBoundIsRefusedBeforeItsBytesArrive) {
  std::string header = EncodeFrame(FrameType::kOutput, "").substr(0, 1);
  const uint32_t n = kMaxFramePayload + 1;
  for (int shift = 24; shift >= 0; shift -= 8)
    header.push_back(static_cast<char>((n >> shift) & 0xff));
  FrameReader reader;
  reader.Append(header);
  std::string error;
  EXPECT_FALSE(reader.Next(&error).has_value());
  EXPECT_THAT(error, HasSubstr("65537 bytes, more than the 65536 allowed"));
}

TEST(TerminalFrame, TheReaderHoldsNoMoreThanTheFramesNotYetTaken) {
  FrameReader reader;
  const std::string frame = EncodeFrame(FrameType::kOutput, std::string(1000, 'a'));
  for (int i = 0; i < 10000; ++i) {
    reader.Append(frame);
    ASSERT_TRUE(reader.Next().has_value());
  }
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(WindowSize, ParsesColsAndRowsWithinBounds) {
  EXPECT_EQ(ParseWindowSize("120 40"), (WindowSize{120, 40}));
  EXPECT_EQ(FormatWindowSize(WindowSize{80, 24}), "80 24");
  for (const char* bad : {"", "120", "0 40", "120 0", "10001 40", "-1 40", "12a 40", "120  40",
                          "120 40 ", "120x40"}) {
    EXPECT_FALSE(ParseWindowSize(bad).has_value()) << bad;
  }
}

TEST(Hello, RoundTripsAndRefusesWhatIsNotOne) {
  Hello hello{"secret", "alice", "xterm-256color", WindowSize{100, 30}};
  std::string error;
  EXPECT_EQ(ParseHello(EncodeHello(hello), &error), hello);
  for (const char* bad :
       {"", "[]", "{\"credential\": \"c\"}",
        "{\"credential\": \"c\", \"user\": \"u\", \"term\": \"xterm\", \"size\": \"0 0\"}",
        "{\"credential\": \"c\", \"user\": \"u\", \"term\": \"a b\", \"size\": \"80 24\"}",
        "{\"credential\": 1, \"user\": \"u\", \"term\": \"xterm\", \"size\": \"80 24\"}"}) {
    error.clear();
    EXPECT_FALSE(ParseHello(bad, &error).has_value()) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

TEST(Hello, TermNamesAreShortAndPlain) {
  EXPECT_TRUE(ValidTerm("xterm-256color"));
  EXPECT_TRUE(ValidTerm("screen.xterm+x_y"));
  EXPECT_FALSE(ValidTerm(""));
  EXPECT_FALSE(ValidTerm(std::string(kMaxTermLength + 1, 'a')));
  EXPECT_FALSE(ValidTerm("xterm\n"));
  EXPECT_FALSE(ValidTerm("../x"));
}

}  // namespace
}  // namespace cohort::terminal
