#include "common/strings.h"

#include <charconv>
#include <cstdint>

namespace cohort {

std::vector<std::string> Split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(sep, start);
    if (pos == std::string_view::npos) {
      parts.emplace_back(text.substr(start));
      return parts;
    }
    parts.emplace_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string_view Trim(std::string_view text) {
  const char* ws = " \t\r\n";
  size_t b = text.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  size_t e = text.find_last_not_of(ws);
  return text.substr(b, e - b + 1);
}

std::string ShellQuote(std::string_view arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789-_./=:,+@%") == std::string_view::npos) {
    return std::string(arg);
  }
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::optional<int64_t> ParseInteger(std::string_view text, int64_t min, int64_t max) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  if (value < min || value > max) return std::nullopt;
  return value;
}

std::optional<int> ParseInt(std::string_view text, int min, int max) {
  auto value = ParseInteger(text, min, max);
  if (!value) return std::nullopt;
  return static_cast<int>(*value);
}

std::string ValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
    unsigned char c = byte(i);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xe  ? 3
                 : (c >> 3) == 0x1e ? 4
                                    : 0;
    bool valid = len > 0 && i + len <= text.size();
    for (size_t k = 1; valid && k < len; ++k) valid = (byte(i + k) & 0xc0) == 0x80;
    if (valid && len > 1) {
      // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8 either.
      uint32_t cp = c & (0x7f >> len);
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (byte(i + k) & 0x3f);
      static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
      valid = cp >= kMin[len] && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
    }
    if (valid) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++i;
    }
  }
  return out;
}

}  // namespace cohort
