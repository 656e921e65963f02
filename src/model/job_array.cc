#include "model/job_array.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>

namespace cohort {
namespace {

std::optional<int> Number(std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

StatusOr<std::vector<int>> ParseArrayIndices(std::string_view text, std::string_view field,
                                             int* max_parallel) {
  auto fail = [&](const std::string& why) -> Status {
    return Status::InvalidArgument(fmt::format("{}: {}", field, why));
  };
  const std::string_view whole = text;
  if (size_t percent = text.rfind('%'); percent != std::string_view::npos) {
    auto limit = Number(text.substr(percent + 1));
    if (!max_parallel || !limit || *limit < 1) {
      return fail(fmt::format("\"{}\": %N (the most jobs at once) must be a number of 1 or more{}",
                              whole, max_parallel ? "" : "; here max_parallel says it"));
    }
    *max_parallel = *limit;
    text = text.substr(0, percent);
  }
  std::set<int> indices;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view part = text.substr(0, comma);
    std::string_view range = part;
    int step = 1;
    if (size_t colon = part.find(':'); colon != std::string_view::npos) {
      auto s = Number(part.substr(colon + 1));
      if (!s || *s < 1)
        return fail(fmt::format("\"{}\": the step after ':' must be 1 or more", part));
      step = *s;
      range = part.substr(0, colon);
    }
    const size_t dash = range.find('-');
    auto first = Number(range.substr(0, dash));
    auto last = dash == std::string_view::npos ? first : Number(range.substr(dash + 1));
    if (!first || !last) {
      return fail(fmt::format(
          "\"{}\" is not an index or a range; use e.g. 7, 0-99, 0-99:2 or 1,5,9", part));
    }
    if (*last < *first) return fail(fmt::format("\"{}\": the range ends before it starts", part));
    if (*last > kMaxArrayIndex) {
      return fail(fmt::format("\"{}\": indices go up to {}", part, kMaxArrayIndex));
    }
    for (int64_t i = *first; i <= *last; i += step) {
      indices.insert(static_cast<int>(i));
      if (indices.size() > kMaxArrayJobs) {
        return fail(fmt::format("\"{}\" makes more than {} jobs, the most one array may have",
                                whole, kMaxArrayJobs));
      }
    }
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
  }
  return std::vector<int>(indices.begin(), indices.end());
}

std::string FormatArrayIndices(const std::vector<int>& indices) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < indices.size()) {
    // The longest run of one step from here (a run of two is written as two numbers).
    size_t j = i + 1;
    const int step = j < indices.size() ? indices[j] - indices[i] : 1;
    while (j < indices.size() && indices[j] - indices[j - 1] == step) ++j;
    if (j - i >= 3) {
      parts.push_back(step == 1 ? fmt::format("{}-{}", indices[i], indices[j - 1])
                                : fmt::format("{}-{}:{}", indices[i], indices[j - 1], step));
      i = j;
    } else {
      parts.push_back(std::to_string(indices[i]));
      ++i;
    }
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

}  // namespace cohort
