#include "slurm/hostlist.h"

#include <fmt/format.h>

#include <cstdint>
#include <optional>

#include "common/strings.h"
#include "slurm/ascii.h"

namespace cohort::slurm {
namespace {

// Numbers in brackets and at the end of names: at most 18 digits, so that they fit an int64.
constexpr size_t kMaxDigits = 18;

bool IsSeparator(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n'; }

std::optional<int64_t> Digits(std::string_view text) {
  if (text.empty() || text.size() > kMaxDigits) return std::nullopt;
  for (char c : text) {
    if (!IsDigit(c)) return std::nullopt;
  }
  return ParseInteger(text, 0, INT64_MAX);
}

struct NumberRange {
  int64_t lo = 0;
  int64_t hi = 0;
  int width = 0;  // zero-padded to this many digits: the width of `lo` as written
};

// "01-03,7" -> {1, 3, width 2}, {7, 7, width 1}.
StatusOr<std::vector<NumberRange>> ParseRanges(std::string_view inside, std::string_view token) {
  std::vector<NumberRange> ranges;
  for (const std::string& part : Split(inside, ',')) {
    const size_t dash = part.find('-');
    const std::string_view lo_text = std::string_view(part).substr(0, dash);
    const std::string_view hi_text =
        dash == std::string::npos ? lo_text : std::string_view(part).substr(dash + 1);
    auto lo = Digits(lo_text);
    auto hi = Digits(hi_text);
    if (!lo || !hi) {
      return Status::InvalidArgument(
          fmt::format("hostlist \"{}\": \"{}\" is not a number or a range of numbers such as 01-03",
                      token, part));
    }
    if (*hi < *lo) {
      return Status::InvalidArgument(
          fmt::format("hostlist \"{}\": the range \"{}\" ends before it starts", token, part));
    }
    ranges.push_back({*lo, *hi, static_cast<int>(lo_text.size())});
  }
  return ranges;
}

class Expander {
 public:
  explicit Expander(std::string_view token) : token_(token) {}

  // Appends every name of `rest` (still holding bracket groups), each after `head`.
  Status Expand(const std::string& head, std::string_view rest, std::vector<std::string>& out) {
    const size_t open = rest.find('[');
    if (open == std::string_view::npos) return Add(head + std::string(rest), out);
    const size_t close = rest.find(']', open);  // the tokenizer saw every '[' closed
    const std::string_view inside = rest.substr(open + 1, close - open - 1);
    if (inside.find('[') != std::string_view::npos) {
      return Status::InvalidArgument(
          fmt::format("hostlist \"{}\": brackets may not be nested", token_));
    }
    COHORT_ASSIGN_OR_RETURN(auto ranges, ParseRanges(inside, token_));
    const std::string before = head + std::string(rest.substr(0, open));
    for (const NumberRange& range : ranges) {
      // Refused here too, so that one huge range is not walked number by number.
      if (range.hi - range.lo >= static_cast<int64_t>(kMaxHostlistNames)) return TooMany();
      for (int64_t n = range.lo; n <= range.hi; ++n) {
        COHORT_RETURN_IF_ERROR(
            Expand(before + fmt::format("{:0{}}", n, range.width), rest.substr(close + 1), out));
      }
    }
    return Status::Ok();
  }

 private:
  Status Add(std::string name, std::vector<std::string>& out) {
    if (name.size() > kMaxHostnameBytes) {
      return Status::InvalidArgument(fmt::format("hostlist \"{}\": a name is longer than {} bytes",
                                                 token_, kMaxHostnameBytes));
    }
    if (out.size() >= kMaxHostlistNames) return TooMany();
    out.push_back(std::move(name));
    return Status::Ok();
  }
  Status TooMany() const {
    return Status::InvalidArgument(
        fmt::format("hostlist \"{}\" names more than {} hosts, the most one list may", token_,
                    kMaxHostlistNames));
  }

  std::string_view token_;
};

// One name as a prefix and its trailing number, if it has one ("gpu07": "gpu", 7, width 2).
struct HostRange {
  std::string prefix;
  bool numbered = false;
  int64_t lo = 0;
  int64_t hi = 0;
  int width = 0;
};

HostRange RangeOf(const std::string& name) {
  size_t digits_at = name.size();
  while (digits_at > 0 && IsDigit(name[digits_at - 1])) --digits_at;
  auto number = Digits(std::string_view(name).substr(digits_at));
  if (!number) return {name};
  return {name.substr(0, digits_at), true, *number, *number,
          static_cast<int>(name.size() - digits_at)};
}

int ZerosToPad(int64_t n, int width) {
  const int digits = static_cast<int>(std::to_string(n).size());
  return width > digits ? width - digits : 0;
}

// Whether two numbers written at widths `a_width` and `b_width` may share one width without
// either one's zero padding changing, and if so that width (Slurm's rule: 9 and 10 share width
// 1, so gpu9,gpu10 is "gpu[9-10]"; 9 at width 2 is "09" and cannot).
std::optional<int> SharedWidth(int64_t a, int a_width, int64_t b, int b_width) {
  if (a_width == b_width) return a_width;
  const bool a_changes = ZerosToPad(a, a_width) != ZerosToPad(a, b_width);
  const bool b_changes = ZerosToPad(b, b_width) != ZerosToPad(b, a_width);
  if (a_changes && b_changes) return std::nullopt;
  return a_changes ? a_width : b_width;
}

std::string Numbers(const HostRange& r) {
  std::string text = fmt::format("{:0{}}", r.lo, r.width);
  if (r.hi > r.lo) text += fmt::format("-{:0{}}", r.hi, r.width);
  return text;
}

bool ShareBrackets(const HostRange& a, const HostRange& b) {
  return a.numbered && b.numbered && a.prefix == b.prefix;
}

}  // namespace

StatusOr<std::vector<std::string>> ExpandHostlist(std::string_view text) {
  std::vector<std::string> names;
  size_t start = 0;
  bool in_brackets = false;
  for (size_t i = 0; i <= text.size(); ++i) {
    const bool end = i == text.size();
    if (!end && text[i] == '[') {
      in_brackets = true;
    } else if (!end && text[i] == ']') {
      if (!in_brackets) {
        return Status::InvalidArgument(
            fmt::format("hostlist \"{}\": ']' without a '[' before it", text));
      }
      in_brackets = false;
    } else if (end || (!in_brackets && IsSeparator(text[i]))) {
      if (end && in_brackets) {
        return Status::InvalidArgument(fmt::format("hostlist \"{}\": '[' is never closed", text));
      }
      const std::string_view token = text.substr(start, i - start);
      if (!token.empty()) {
        COHORT_RETURN_IF_ERROR(Expander(token).Expand("", token, names));
      }
      start = i + 1;
    }
  }
  return names;
}

std::string CompressHostlist(const std::vector<std::string>& names) {
  // Consecutive names that continue a range join it, as Slurm pushes hosts one by one.
  std::vector<HostRange> ranges;
  for (const std::string& name : names) {
    HostRange next = RangeOf(name);
    if (!ranges.empty()) {
      HostRange& last = ranges.back();
      if (ShareBrackets(last, next) && last.hi + 1 == next.lo) {
        if (auto width = SharedWidth(last.lo, last.width, next.lo, next.width)) {
          last.width = *width;
          last.hi = next.hi;
          continue;
        }
      }
    }
    ranges.push_back(std::move(next));
  }
  // Neighbouring ranges of one prefix share one pair of brackets: "gpu[01-03,7]".
  std::string out;
  for (size_t i = 0; i < ranges.size();) {
    if (!out.empty()) out += ',';
    const HostRange& first = ranges[i];
    if (!first.numbered) {
      out += first.prefix;
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < ranges.size() && ShareBrackets(first, ranges[j])) ++j;
    const bool brackets = j - i > 1 || first.hi > first.lo;
    out += first.prefix;
    if (brackets) out += '[';
    for (size_t k = i; k < j; ++k) {
      if (k > i) out += ',';
      out += Numbers(ranges[k]);
    }
    if (brackets) out += ']';
    i = j;
  }
  return out;
}

}  // namespace cohort::slurm
