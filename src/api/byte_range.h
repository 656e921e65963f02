// The Range header of a download (RFC 9110, section 14): one range of bytes, "bytes=FIRST-LAST",
// "bytes=FIRST-" (to the end) or "bytes=-N" (the last N), resolved against the object's size and
// the most bytes one answer holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace cohort::api {

struct ByteRangeSpec {
  std::optional<int64_t> first;  // absent: the last `last` bytes ("bytes=-N")
  std::optional<int64_t> last;   // absent: to the end ("bytes=FIRST-")
};

// kInvalidArgument naming the header and the form it takes for anything but one such range
// (several ranges, another unit, FIRST after LAST, no digits).
StatusOr<ByteRangeSpec> ParseByteRange(std::string_view header);

// The bytes [offset, offset + length) that answer `spec` for an object of `size` bytes, at most
// `max_length` of them (a longer range is cut: the answer's Content-Range says what it holds);
// nothing when the range starts at or past the end (416).
struct ByteRange {
  int64_t offset = 0;
  int64_t length = 0;
};
std::optional<ByteRange> ResolveByteRange(const ByteRangeSpec& spec, int64_t size,
                                          int64_t max_length);

// "bytes FIRST-LAST/SIZE", the Content-Range of an answer holding `range`.
std::string ContentRange(const ByteRange& range, int64_t size);

}  // namespace cohort::api
