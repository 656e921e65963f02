// What flows over a session's terminal connection (docs/runtimes.md, "Shells"), between
// `cohort shell`, the master that relays it and the task's terminal server: frames of a type
// byte, a 4-byte big-endian length and that many bytes. The master reads every frame that
// passes, so that it can tell input from output (a session's idleness) and say things to the
// person at the terminal (a warning before the session is ended).
//
// Pure code without Cohort's common library: the terminal server that uses it is linked static,
// to run inside any container image.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cohort::terminal {

enum class FrameType : char {
  kHello = 'h',    // to the terminal, first: who attaches, with what (terminal_hello.h)
  kInput = 'i',    // to the terminal: keystrokes, as typed (Ctrl-C is byte 3)
  kOutput = 'o',   // from the terminal: what the shell wrote
  kResize = 'w',   // to the terminal: its new size, "COLS ROWS"
  kNotice = 'n',   // to the person: a line from Cohort ("this session ends in 5m: idle")
  kExit = 'x',     // from the terminal: the shell ended; its exit status as text ("0", "130")
  kRefused = 'e',  // from the terminal or the master: why the connection is not served
};

// No frame carries more: a terminal's writes are a few KiB, and a reader holds at most one.
inline constexpr size_t kMaxFramePayload = 64 * 1024;
inline constexpr size_t kFrameHeaderBytes = 5;

struct Frame {
  FrameType type = FrameType::kOutput;
  std::string payload;
  bool operator==(const Frame&) const = default;
};

// The frame's bytes. REQUIRES: payload.size() <= kMaxFramePayload.
std::string EncodeFrame(FrameType type, std::string_view payload);
inline std::string EncodeFrame(const Frame& frame) {
  return EncodeFrame(frame.type, frame.payload);
}

// Frames from a byte stream that arrives in pieces of any size.
class FrameReader {
 public:
  // Takes more of the stream.
  void Append(std::string_view bytes) { buffer_.append(bytes); }
  // The next whole frame, if one has arrived; `error` (when not null) gets why the stream is
  // not frames (an unknown type, a length over kMaxFramePayload), and no frame comes after it.
  std::optional<Frame> Next(std::string* error = nullptr);
  // Bytes taken but not yet returned as frames: at most a header and a payload.
  size_t buffered() const { return buffer_.size() - offset_; }

 private:
  std::string buffer_;
  size_t offset_ = 0;
  bool broken_ = false;
};

struct WindowSize {
  int cols = 80;
  int rows = 24;
  bool operator==(const WindowSize&) const = default;
};

// "COLS ROWS", each from 1 to 10000; nothing for anything else.
std::optional<WindowSize> ParseWindowSize(std::string_view text);
std::string FormatWindowSize(const WindowSize& size);

}  // namespace cohort::terminal
