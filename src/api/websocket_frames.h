// Follows the frames of a WebSocket stream (RFC 6455 5.2) that the master splices without
// speaking the protocol (api/http_proxy.h), to tell a person's messages from the browser's
// own traffic: a notebook's open tab answers the server's pings every few seconds, and that
// is no one using the session (master/idle_sessions.h).
//
// Reads only the frame headers, a chunk at a time as bytes arrive: a header split across chunks,
// or several frames in one chunk, are followed the same. A stream that breaks the framing is
// not refused (the endpoints do that); its bytes count as messages from then on.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace cohort::api {

class WebSocketFrames {
 public:
  // Whether `bytes`, the next of the stream, begin a data frame (text, binary or a continuation,
  // not a ping, pong or close).
  bool Feed(std::string_view bytes);

 private:
  // The header's size once its first two bytes are known: 2, plus 2 or 8 of extended length,
  // plus 4 of mask.
  size_t HeaderSize() const;
  uint64_t PayloadSize() const;

  std::array<uint8_t, 14> header_{};
  size_t header_have_ = 0;
  uint64_t payload_left_ = 0;
  bool broken_ = false;
};

}  // namespace cohort::api
