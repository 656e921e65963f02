#include "store/object_store.h"

#include <fmt/format.h>

namespace cohort::store {

namespace {

// The number of bytes of the UTF-8 sequence that starts with `c`, or 0 for a byte that cannot.
size_t SequenceLength(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return 2;
  if (c >= 0xe0 && c <= 0xef) return 3;
  if (c >= 0xf0 && c <= 0xf4) return 4;
  return 0;
}

std::string Problem(std::string_view key) {
  if (key.empty()) return "is empty";
  if (key.size() > kMaxKeyBytes) return fmt::format("is longer than {} bytes", kMaxKeyBytes);
  if (key.front() == '/') return "starts with '/': keys are relative";
  if (key.back() == '/') return "ends with '/'";
  for (size_t i = 0; i < key.size();) {
    auto c = static_cast<unsigned char>(key[i]);
    size_t n = SequenceLength(c);
    if (n == 0 || i + n > key.size()) return "is not UTF-8";
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(key[i + k]) & 0xc0) != 0x80) return "is not UTF-8";
    }
    if (c < 0x20 || c == 0x7f) return "holds a control character";
    if (c == '\\') return "holds a backslash";
    i += n;
  }
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    if (end == std::string_view::npos) end = key.size();
    std::string_view segment = key.substr(start, end - start);
    if (segment.empty()) return "has an empty segment (\"//\")";
    if (segment == "." || segment == "..") {
      return fmt::format("has a \"{}\" segment", segment);
    }
    start = end + 1;
  }
  return "";
}

}  // namespace

Status CheckKey(std::string_view key) {
  std::string problem = Problem(key);
  if (problem.empty()) return Status::Ok();
  // A key that is not UTF-8 is not quoted: the message must be.
  std::string shown = problem == "is not UTF-8" || problem == "holds a control character"
                          ? std::string("the key")
                          : fmt::format("key \"{}\"", key.substr(0, 200));
  return Status::InvalidArgument(fmt::format("{} {}", shown, problem));
}

Status CheckRangeStart(int64_t offset) {
  if (offset >= 0) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("offset: {} is negative; a range starts at byte 0 or later", offset));
}

}  // namespace cohort::store
