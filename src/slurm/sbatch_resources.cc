#include "slurm/sbatch_resources.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "common/strings.h"
#include "slurm/ascii.h"
#include "slurm/hostlist.h"

namespace cohort::slurm {
namespace {

// The most GPUs one request names (a sanity bound: far beyond any node or job).
constexpr int kMaxGpuCount = 65536;

bool IsGpuTypeName(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return IsDigit(c) || IsLetter(c) || c == '_' || c == '-' || c == '.';
  });
}

StatusOr<int> GpuCount(std::string_view text, std::string_view whole) {
  auto count = ParseInt(text, 0, kMaxGpuCount);
  if (!count) {
    return Status::InvalidArgument(
        fmt::format("\"{}\": the GPU count \"{}\" is not a whole number from 0 to {}", whole, text,
                    kMaxGpuCount));
  }
  return *count;
}

Status NotATime(std::string_view text) {
  return Status::InvalidArgument(fmt::format(
      "\"{}\" is not a time limit; use minutes, minutes:seconds, hours:minutes:seconds, "
      "days-hours, days-hours:minutes, days-hours:minutes:seconds or UNLIMITED",
      text));
}

}  // namespace

StatusOr<NodeRange> ParseNodeRange(std::string_view text) {
  if (text.find_first_of(",:") != std::string_view::npos) {
    return Status::InvalidArgument(
        fmt::format("\"{}\": lists of allowed node counts are not supported; give one count or "
                    "MIN-MAX (e.g. 2-4)",
                    text));
  }
  const size_t dash = text.find('-');
  const std::string_view min_text = text.substr(0, dash);
  const std::string_view max_text =
      dash == std::string_view::npos ? min_text : text.substr(dash + 1);
  const int most = static_cast<int>(kMaxHostlistNames);
  auto min = ParseInt(min_text, 1, most);
  auto max = ParseInt(max_text, 1, most);
  if (!min || !max) {
    return Status::InvalidArgument(fmt::format(
        "\"{}\" is not a node count; use N or MIN-MAX (e.g. 2-4), each from 1 to {}", text, most));
  }
  if (*max < *min) {
    return Status::InvalidArgument(fmt::format("\"{}\": the range ends before it starts", text));
  }
  return NodeRange{*min, *max};
}

StatusOr<int> ParsePositiveCount(std::string_view text, int max) {
  auto count = ParseInt(text, 1, max);
  if (!count) {
    return Status::InvalidArgument(
        fmt::format("\"{}\" is not a whole number from 1 to {}", text, max));
  }
  return *count;
}

std::string GpuRequest::ToString() const {
  return type.empty() ? std::to_string(count) : fmt::format("{}:{}", type, count);
}

StatusOr<GpuRequest> ParseGpuRequest(std::string_view text) {
  if (text.find(',') != std::string_view::npos) {
    return Status::InvalidArgument(fmt::format(
        "\"{}\": a job asks for GPUs of one type; give [type:]count, e.g. a100:2", text));
  }
  const size_t colon = text.rfind(':');
  GpuRequest request;
  if (colon != std::string_view::npos) {
    request.type = std::string(text.substr(0, colon));
    if (!IsGpuTypeName(request.type)) {
      return Status::InvalidArgument(fmt::format(
          "\"{}\": \"{}\" is not a GPU type (letters, digits, '_', '-', '.')", text, request.type));
    }
  }
  COHORT_ASSIGN_OR_RETURN(request.count, GpuCount(text.substr(colon + 1), text));
  return request;
}

StatusOr<std::optional<GpuRequest>> ParseGres(std::string_view text) {
  if (SameIgnoringCase(text, "none")) return std::optional<GpuRequest>();
  std::optional<GpuRequest> gpus;
  for (const std::string& entry : Split(text, ',')) {
    std::string_view spec = entry;
    if (spec.starts_with("gres/")) spec.remove_prefix(5);
    const std::vector<std::string> parts = Split(spec, ':');
    if (parts[0] != "gpu") {
      return Status::InvalidArgument(fmt::format(
          "\"{}\": Cohort allocates GPUs only; give gpu[:type][:count], e.g. gpu:a100:2", entry));
    }
    if (gpus) {
      return Status::InvalidArgument(fmt::format(
          "\"{}\": a job asks for GPUs of one type; give one gpu[:type][:count]", text));
    }
    if (parts.size() > 3) {
      return Status::InvalidArgument(
          fmt::format("\"{}\" is not gpu[:type][:count], e.g. gpu:a100:2", entry));
    }
    // gpu:2 is a count and gpu:a100 a type: as in Slurm, a part that starts with a digit counts.
    std::optional<std::string> type;
    std::string count = "1";
    if (parts.size() == 3) {
      type = parts[1];
      count = parts[2];
    } else if (parts.size() == 2 && !parts[1].empty() && IsDigit(parts[1][0])) {
      count = parts[1];
    } else if (parts.size() == 2) {
      type = parts[1];
    }
    if (type && !IsGpuTypeName(*type)) {
      return Status::InvalidArgument(fmt::format(
          "\"{}\": \"{}\" is not a GPU type (letters, digits, '_', '-', '.')", entry, *type));
    }
    GpuRequest request{type.value_or("")};
    COHORT_ASSIGN_OR_RETURN(request.count, GpuCount(count, entry));
    gpus = request;
  }
  return gpus;
}

StatusOr<int64_t> ParseMemorySize(std::string_view text) {
  const size_t digits = std::find_if_not(text.begin(), text.end(), IsDigit) - text.begin();
  std::string_view unit = text.substr(digits);
  auto number = ParseInteger(text.substr(0, digits), 0, INT64_MAX);
  if (unit.size() == 2 && Lower(unit[1]) == 'b') unit.remove_suffix(1);
  const char letter = unit.size() == 1 ? Lower(unit[0]) : 'm';
  const bool known_unit =
      unit.empty() ||
      (unit.size() == 1 && std::string_view("kmgt").find(letter) != std::string_view::npos);
  if (!number || digits > 15 || !known_unit) {
    return Status::InvalidArgument(fmt::format(
        "\"{}\" is not a memory size; give mebibytes, or a number with K, M, G or T (e.g. 500M, "
        "32G)",
        text));
  }
  // At most 1 EiB, far beyond any machine, so that bytes stay well inside an int64.
  constexpr int64_t kMostMebibytes = int64_t{1} << 40;
  const int shift = letter == 'g' ? 10 : letter == 't' ? 20 : 0;
  if (*number > (kMostMebibytes >> shift)) {
    return Status::InvalidArgument(fmt::format("\"{}\" is more memory than any node has", text));
  }
  int64_t mebibytes = *number << shift;
  if (letter == 'k') mebibytes = (*number + 1023) / 1024;  // Slurm rounds up to whole MiB
  return mebibytes << 20;
}

StatusOr<TimeLimit> ParseTimeLimit(std::string_view text) {
  if (text == "-1" || SameIgnoringCase(text, "INFINITE") || SameIgnoringCase(text, "UNLIMITED")) {
    return TimeLimit{true};
  }
  auto number = [](std::string_view field) -> std::optional<int64_t> {
    if (!AllDigits(field) || field.size() > 9) return std::nullopt;
    return ParseInteger(field, 0, INT64_MAX);
  };
  const size_t dash = text.find('-');
  std::optional<int64_t> days;
  if (dash != std::string_view::npos) {
    days = number(text.substr(0, dash));
    if (!days) return NotATime(text);
  }
  const std::vector<std::string> fields = Split(days ? text.substr(dash + 1) : text, ':');
  if (fields.size() > 3) return NotATime(text);
  std::vector<int64_t> values;
  for (const std::string& field : fields) {
    auto value = number(field);
    if (!value) return NotATime(text);
    values.push_back(*value);
  }
  values.resize(3, 0);
  int64_t seconds = 0;
  if (days) {
    seconds = *days * 86400 + values[0] * 3600 + values[1] * 60 + values[2];
  } else if (fields.size() == 3) {
    seconds = values[0] * 3600 + values[1] * 60 + values[2];  // hours:minutes:seconds
  } else {
    seconds = values[0] * 60 + values[1];  // minutes[:seconds]
  }
  const int64_t minutes = (seconds + 59) / 60;
  if (minutes == 0) return TimeLimit{true};  // Slurm: a limit of zero is no limit
  return TimeLimit{false, std::chrono::minutes(minutes)};
}

}  // namespace cohort::slurm
