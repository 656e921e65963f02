#include "api/websocket_frames.h"

namespace cohort::api {
namespace {

constexpr uint8_t kFirstControlOpcode = 0x8;  // close 0x8, ping 0x9, pong 0xA and reserved

}  // namespace

size_t WebSocketFrames::HeaderSize() const {
  size_t size = 2;
  const uint8_t length = header_[1] & 0x7F;
  if (length == 126) size += 2;
  if (length == 127) size += 8;
  if (header_[1] & 0x80) size += 4;  // masked: every frame a client sends
  return size;
}

uint64_t WebSocketFrames::PayloadSize() const {
  const uint8_t length = header_[1] & 0x7F;
  if (length < 126) return length;
  const size_t bytes = length == 126 ? 2 : 8;
  uint64_t size = 0;
  for (size_t i = 0; i < bytes; ++i) size = size << 8 | header_[2 + i];
  return size;
}

bool WebSocketFrames::Feed(std::string_view bytes) {
  if (broken_) return !bytes.empty();
  bool data = false;
  while (!bytes.empty()) {
    if (payload_left_ > 0) {
      const uint64_t skip = std::min<uint64_t>(payload_left_, bytes.size());
      payload_left_ -= skip;
      bytes.remove_prefix(skip);
      continue;
    }
    header_[header_have_++] = static_cast<uint8_t>(bytes.front());
    bytes.remove_prefix(1);
    if (header_have_ < 2 || header_have_ < HeaderSize()) continue;
    const uint8_t opcode = header_[0] & 0x0F;
    if (opcode < kFirstControlOpcode) data = true;
    payload_left_ = PayloadSize();
    // RFC 6455 5.2: the most significant bit of a 64-bit length must be 0; a control frame's
    // payload is at most 125 bytes.
    if ((payload_left_ >> 63) != 0 || (opcode >= kFirstControlOpcode && payload_left_ > 125)) {
      broken_ = true;
      return true;
    }
    header_have_ = 0;
  }
  return data;
}

}  // namespace cohort::api
