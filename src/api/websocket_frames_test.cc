#include "api/websocket_frames.h"

#include <gtest/gtest.h>

#include <string>

namespace cohort::api {
namespace {

// A client's frame (masked, as browsers send them) of `opcode` with `payload_size` bytes.
std::string Frame(uint8_t opcode, size_t payload_size) {
  std::string frame;
  frame += static_cast<char>(0x80 | opcode);
  if (payload_size < 126) {
    frame += static_cast<char>(0x80 | payload_size);
  } else if (payload_size <= 0xFFFF) {
    frame += static_cast<char>(0x80 | 126);
    frame += static_cast<char>(payload_size >> 8);
    frame += static_cast<char>(payload_size & 0xFF);
  } else {
    frame += static_cast<char>(0x80 | 127);
    for (int shift = 56; shift >= 0; shift -= 8) {
      frame += static_cast<char>((static_cast<uint64_t>(payload_size) >> shift) & 0xFF);
    }
  }
  frame += std::string("\x01\x02\x03\x04", 4);  // the mask
  frame += std::string(payload_size, 'x');
  return frame;
}

constexpr uint8_t kText = 0x1, kBinary = 0x2, kClose = 0x8, kPing = 0x9, kPong = 0xA;

TEST(WebSocketFrames, PingsPongsAndClosesAreNoMessages) {
  WebSocketFrames frames;
  EXPECT_FALSE(frames.Feed(Frame(kPong, 4)));
  EXPECT_FALSE(frames.Feed(Frame(kPing, 0) + Frame(kPong, 125)));
  EXPECT_TRUE(frames.Feed(Frame(kText, 30)));
  EXPECT_FALSE(frames.Feed(Frame(kClose, 2)));
}

TEST(WebSocketFrames, FollowsFramesSplitAcrossChunksAndManyInOne) {
  // A pong, then a 70,000-byte binary message (8-byte length), then a pong, cut into pieces of
  // 3 bytes: only the piece with the message's header is a message.
  const std::string stream = Frame(kPong, 10) + Frame(kBinary, 70'000) + Frame(kPong, 5);
  const size_t message_at = Frame(kPong, 10).size();
  const size_t header_size = 2 + 8 + 4;
  WebSocketFrames frames;
  int messages = 0;
  for (size_t at = 0; at < stream.size(); at += 3) {
    bool message = frames.Feed(std::string_view(stream).substr(at, 3));
    if (message) {
      ++messages;
      EXPECT_GE(at + 3, message_at + header_size);
      EXPECT_LT(at, message_at + header_size);
    }
  }
  EXPECT_EQ(messages, 1);
  // And a message of 300 bytes (2-byte length) among pongs, all in one chunk.
  WebSocketFrames again;
  EXPECT_TRUE(again.Feed(Frame(kPong, 0) + Frame(kText, 300) + Frame(kPong, 0)));
  EXPECT_FALSE(again.Feed(Frame(kPong, 1)));
}

TEST(WebSocketFrames, ABrokenStreamCountsAsMessages) {
  WebSocketFrames frames;
  std::string ping_too_long = Frame(kPing, 126);  // control frames carry at most 125 bytes
  EXPECT_TRUE(frames.Feed(ping_too_long));
  EXPECT_TRUE(frames.Feed(Frame(kPong, 1))) << "its framing is lost: every byte is use now";
  EXPECT_FALSE(frames.Feed(""));
}

}  // namespace
}  // namespace cohort::api
