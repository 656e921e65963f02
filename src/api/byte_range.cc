#include "api/byte_range.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "common/strings.h"

namespace cohort::api {

StatusOr<ByteRangeSpec> ParseByteRange(std::string_view header) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format(
        "Range: \"{}\" {}; ask for one range of bytes: bytes=FIRST-LAST, bytes=FIRST- or "
        "bytes=-N",
        header.substr(0, 100), why));
  };
  constexpr std::string_view kUnit = "bytes=";
  if (!header.starts_with(kUnit)) return bad("is not a range of bytes");
  std::string_view spec = header.substr(kUnit.size());
  if (spec.find(',') != std::string_view::npos) return bad("asks for several ranges");
  size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return bad("has no '-'");
  auto number = [](std::string_view text) -> std::optional<int64_t> {
    if (text.empty() ||
        !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    return ParseInteger(text, 0, std::numeric_limits<int64_t>::max());
  };
  std::string_view first_text = spec.substr(0, dash);
  std::string_view last_text = spec.substr(dash + 1);
  ByteRangeSpec range;
  if (!first_text.empty()) {
    range.first = number(first_text);
    if (!range.first) return bad("does not start with a byte number");
  }
  if (!last_text.empty()) {
    range.last = number(last_text);
    if (!range.last) return bad("does not end with a byte number");
  }
  if (!range.first && !range.last) return bad("names no byte");
  if (range.first && range.last && *range.last < *range.first) {
    return bad("ends before it starts");
  }
  if (!range.first && *range.last == 0) return bad("asks for the last 0 bytes");
  return range;
}

std::optional<ByteRange> ResolveByteRange(const ByteRangeSpec& spec, int64_t size,
                                          int64_t max_length) {
  int64_t offset = 0;
  int64_t end = size;  // one past the last byte
  if (!spec.first) {
    offset = size - std::min(size, *spec.last);
  } else {
    offset = *spec.first;
    if (spec.last && *spec.last < size) end = *spec.last + 1;
  }
  if (offset >= size) return std::nullopt;
  return ByteRange{offset, std::min(end - offset, max_length)};
}

std::string ContentRange(const ByteRange& range, int64_t size) {
  return fmt::format("bytes {}-{}/{}", range.offset, range.offset + range.length - 1, size);
}

}  // namespace cohort::api
