#include "common/units.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include "common/strings.h"

namespace cohort {
namespace {

struct Suffix {
  std::string_view name;
  int64_t factor;
};

constexpr int64_t kKi = 1024;
// About 3,000 years: longer durations are mistakes, and sums of parts stay far from overflow.
constexpr double kMaxDurationUs = 1e17;
constexpr std::array<Suffix, 10> kByteSuffixes = {{
    {"Ki", kKi},
    {"Mi", kKi* kKi},
    {"Gi", kKi* kKi* kKi},
    {"Ti", kKi* kKi* kKi* kKi},
    {"Pi", kKi* kKi* kKi* kKi* kKi},
    {"k", 1000},
    {"M", 1000 * 1000},
    {"G", 1000LL * 1000 * 1000},
    {"T", 1000LL * 1000 * 1000 * 1000},
    {"P", 1000LL * 1000 * 1000 * 1000 * 1000},
}};

// Splits "1.5Gi" into the number 1.5 and the rest "Gi". Returns false if there is no number.
bool SplitNumber(std::string_view text, double* number, std::string_view* rest) {
  size_t i = 0;
  bool digits = false;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    ++i;
    digits = true;
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      ++i;
      digits = true;
    }
  }
  if (!digits) return false;
  // Not std::stod: that throws on a number beyond a double ("1" and 400 zeros), and every
  // caller promises an error instead. Such a number becomes infinity (too large), or the
  // smallest double if it is a fraction too small to hold, so that the callers' own range and
  // whole-number checks refuse it.
  auto [end, ec] = std::from_chars(text.data(), text.data() + i, *number);
  if (ec == std::errc::result_out_of_range) {
    std::string_view whole = text.substr(0, text.find('.'));
    bool big = whole.find_first_not_of('0') != std::string_view::npos;
    *number =
        big ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::denorm_min();
  } else if (ec != std::errc() || end != text.data() + i) {
    return false;
  }
  *rest = text.substr(i);
  return true;
}

}  // namespace

StatusOr<int64_t> ParseByteSize(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidArgument(fmt::format("\"{}\" is not a size; use e.g. 32Gi", text));
  };
  double number = 0;
  std::string_view rest;
  if (!SplitNumber(text, &number, &rest)) return bad();
  int64_t factor = 1;
  if (!rest.empty()) {
    bool found = false;
    for (const auto& s : kByteSuffixes) {
      if (rest == s.name) {
        factor = s.factor;
        found = true;
        break;
      }
    }
    if (!found) return bad();
  }
  double bytes = number * static_cast<double>(factor);
  if (bytes > static_cast<double>(std::numeric_limits<int64_t>::max() / 2)) {
    return Status::InvalidArgument(fmt::format("\"{}\" is too large", text));
  }
  if (bytes != std::floor(bytes)) {
    return Status::InvalidArgument(fmt::format("\"{}\" is not a whole number of bytes", text));
  }
  return static_cast<int64_t>(bytes);
}

std::string FormatByteSize(int64_t bytes) {
  static constexpr std::array<std::pair<std::string_view, int64_t>, 5> kUnits = {{
      {"Pi", kKi * kKi * kKi * kKi * kKi},
      {"Ti", kKi * kKi * kKi * kKi},
      {"Gi", kKi * kKi * kKi},
      {"Mi", kKi * kKi},
      {"Ki", kKi},
  }};
  if (bytes == 0) return "0";
  for (const auto& [name, factor] : kUnits) {
    if (bytes % factor == 0) return fmt::format("{}{}", bytes / factor, name);
  }
  return std::to_string(bytes);
}

std::string FormatByteSizeApprox(int64_t bytes) {
  static constexpr std::array<std::string_view, 6> kUnits = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < kUnits.size()) {
    value /= 1024;
    ++unit;
  }
  std::string text = fmt::format("{:.1f}", value);
  if (text.size() > 2 && text.substr(text.size() - 2) == ".0") text.resize(text.size() - 2);
  return text + std::string(kUnits[unit]);
}

StatusOr<int64_t> ParseMilliCpus(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidArgument(
        fmt::format("\"{}\" is not a CPU amount; use e.g. 4, 0.5 or 500m", text));
  };
  double number = 0;
  std::string_view rest;
  if (!SplitNumber(text, &number, &rest)) return bad();
  double milli = 0;
  if (rest.empty()) {
    milli = number * 1000;
  } else if (rest == "m") {
    milli = number;
  } else {
    return bad();
  }
  if (milli > 1e12) return Status::InvalidArgument(fmt::format("\"{}\" is too large", text));
  // 64.9 is 64899.99999999999 thousandths in binary: what is a whole number of thousandths but
  // for the last bits of a double is one (found by the small_parsers fuzzer: "64900m" printed as
  // "64.9" did not parse back).
  // The tolerance is relative, so that no amount too small to be a thousandth rounds to 0.
  double whole = std::round(milli);
  if (whole == 0 ? milli != 0 : std::abs(milli - whole) > 1e-9 * whole) {
    return Status::InvalidArgument(fmt::format("\"{}\" is finer than a thousandth of a CPU", text));
  }
  return static_cast<int64_t>(whole);
}

std::string FormatMilliCpus(int64_t milli) {
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  if (milli % 100 == 0) return fmt::format("{}.{}", milli / 1000, (milli % 1000) / 100);
  return fmt::format("{}m", milli);
}

std::optional<int64_t> MilliCpusFromNumber(double cpus) {
  constexpr double kLimit = 1e12;
  if (!std::isfinite(cpus) || std::abs(cpus) > kLimit) return std::nullopt;
  return std::llround(cpus * 1000);
}

StatusOr<Duration> ParseDuration(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidArgument(
        fmt::format("\"{}\" is not a duration; use e.g. 90m, 2h or 1h30m", text));
  };
  if (text.empty()) return bad();
  int64_t total_us = 0;
  std::string_view rest = text;
  while (!rest.empty()) {
    double number = 0;
    std::string_view after;
    if (!SplitNumber(rest, &number, &after)) return bad();
    size_t unit_len = 0;
    while (unit_len < after.size() && std::isalpha(static_cast<unsigned char>(after[unit_len]))) {
      ++unit_len;
    }
    std::string_view unit = after.substr(0, unit_len);
    double factor_us = 0;
    if (unit == "us") {
      factor_us = 1;
    } else if (unit == "ms") {
      factor_us = 1e3;
    } else if (unit == "s") {
      factor_us = 1e6;
    } else if (unit == "m") {
      factor_us = 60e6;
    } else if (unit == "h") {
      factor_us = 3600e6;
    } else if (unit == "d") {
      factor_us = 86400e6;
    } else {
      return bad();
    }
    // The bound holds for the sum, not only for each part: "1157407d" repeated 100 times would
    // overflow int64_t.
    double us = number * factor_us;
    if (us > kMaxDurationUs - static_cast<double>(total_us)) {
      return Status::InvalidArgument(fmt::format("\"{}\" is too long", text));
    }
    // Rounded, not truncated: 1.001ms is 1000.9999... microseconds as a double.
    total_us += std::llround(us);
    rest = after.substr(unit_len);
  }
  return Duration(total_us);
}

std::string FormatDuration(Duration d) {
  int64_t us = d.count();
  std::string sign;
  if (us < 0) {
    sign = "-";
    us = -us;
  }
  if (us < 1'000'000) {
    return fmt::format("{}{}ms", sign, us / 1000);
  }
  int64_t s = us / 1'000'000;
  int64_t h = s / 3600, m = (s % 3600) / 60, sec = s % 60;
  std::string out = sign;
  if (h) out += fmt::format("{}h", h);
  if (m) out += fmt::format("{}m", m);
  if (sec || out == sign) out += fmt::format("{}s", sec);
  return out;
}

StatusOr<Timestamp> ParseTimeSpec(std::string_view text, Timestamp now) {
  auto bad = [&] {
    return Status::InvalidArgument(
        fmt::format("\"{}\" is not a time; use a date (2026-11-01), an RFC 3339 time "
                    "(2026-11-01T08:00:00Z) or how long ago (7d, 12h)",
                    text));
  };
  if (text == "now") return now;
  std::string_view ago = text;
  if (ago.ends_with(" ago")) ago.remove_suffix(4);
  if (!ago.empty() && std::isdigit(static_cast<unsigned char>(ago[0])) &&
      ago.find('-') == ago.npos && ago.find(':') == ago.npos) {
    auto d = ParseDuration(ago);
    if (!d.ok()) return bad();
    return *d >= now.time_since_epoch() ? FromMicros(0) : now - *d;
  }
  std::string iso(text);
  if (iso.size() == 10) iso += "T00:00:00Z";  // a date: its midnight, UTC
  // An offset: the same clock reading in UTC, less the offset.
  Duration offset{0};
  if (iso.size() > 6 && iso[iso.size() - 3] == ':' &&
      (iso[iso.size() - 6] == '+' || iso[iso.size() - 6] == '-')) {
    auto hours = ParseInt(std::string_view(iso).substr(iso.size() - 5, 2), 0, 23);
    auto minutes = ParseInt(std::string_view(iso).substr(iso.size() - 2, 2), 0, 59);
    if (!hours || !minutes || iso.size() < 25) return bad();
    offset = std::chrono::hours(*hours) + std::chrono::minutes(*minutes);
    if (iso[iso.size() - 6] == '-') offset = -offset;
    iso = iso.substr(0, iso.size() - 6) + "Z";
  }
  auto t = ParseTimestamp(iso);
  if (!t.ok()) return bad();
  Timestamp utc = *t - offset;
  if (utc < FromMicros(0)) return bad();
  return utc;
}

}  // namespace cohort
