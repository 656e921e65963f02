#include "terminal/terminal_frame.h"

#include <charconv>

namespace cohort::terminal {
namespace {

bool KnownType(char c) {
  switch (static_cast<FrameType>(c)) {
    case FrameType::kHello:
    case FrameType::kInput:
    case FrameType::kOutput:
    case FrameType::kResize:
    case FrameType::kNotice:
    case FrameType::kExit:
    case FrameType::kRefused:
      return true;
  }
  return false;
}

constexpr int kMaxWindowSide = 10000;

}  // namespace

std::string EncodeFrame(FrameType type, std::string_view payload) {
  std::string out;
  out.reserve(kFrameHeaderBytes + payload.size());
  out.push_back(static_cast<char>(type));
  const uint32_t n = static_cast<uint32_t>(payload.size());
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((n >> shift) & 0xff));
  out.append(payload);
  return out;
}

std::optional<Frame> FrameReader::Next(std::string* error) {
  if (broken_) {
    if (error) *error = "the stream is not terminal frames";
    return std::nullopt;
  }
  std::string_view rest(buffer_);
  rest.remove_prefix(offset_);
  if (rest.size() < kFrameHeaderBytes) return std::nullopt;
  if (!KnownType(rest[0])) {
    broken_ = true;
    if (error)
      *error = "a frame of unknown type " + std::to_string(static_cast<unsigned char>(rest[0]));
    return std::nullopt;
  }
  uint32_t n = 0;
  for (size_t i = 1; i < kFrameHeaderBytes; ++i) n = (n << 8) | static_cast<unsigned char>(rest[i]);
  if (n > kMaxFramePayload) {
    broken_ = true;
    if (error) {
      *error = "a frame of " + std::to_string(n) + " bytes, more than the " +
               std::to_string(kMaxFramePayload) + " allowed";
    }
    return std::nullopt;
  }
  if (rest.size() < kFrameHeaderBytes + n) return std::nullopt;
  Frame frame{static_cast<FrameType>(rest[0]), std::string(rest.substr(kFrameHeaderBytes, n))};
  offset_ += kFrameHeaderBytes + n;
  // What was returned goes once it is most of the buffer, so that the buffer stays bounded.
  if (offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  } else if (offset_ > buffer_.size() / 2) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  return frame;
}

std::optional<WindowSize> ParseWindowSize(std::string_view text) {
  size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  auto number = [](std::string_view s) -> std::optional<int> {
    int v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || v < 1 || v > kMaxWindowSide) {
      return std::nullopt;
    }
    return v;
  };
  auto cols = number(text.substr(0, space));
  auto rows = number(text.substr(space + 1));
  if (!cols || !rows) return std::nullopt;
  return WindowSize{*cols, *rows};
}

std::string FormatWindowSize(const WindowSize& size) {
  return std::to_string(size.cols) + " " + std::to_string(size.rows);
}

}  // namespace cohort::terminal
