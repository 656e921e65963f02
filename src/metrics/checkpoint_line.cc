#include "metrics/checkpoint_line.h"

#include <fmt/format.h>

#include <limits>

#include "common/strings.h"
#include "metrics/line_fields.h"
#include "metrics/line_protocol.h"

namespace cohort::metrics {

bool IsCheckpointLine(std::string_view line) {
  if (line.ends_with('\r')) line.remove_suffix(1);
  if (!line.starts_with(kCheckpointLineWord)) return false;
  return line.size() == kCheckpointLineWord.size() || line[kCheckpointLineWord.size()] == ' ';
}

StatusOr<CheckpointMark> ParseCheckpointLine(std::string_view line, double read_time) {
  if (line.ends_with('\r')) line.remove_suffix(1);
  if (!IsCheckpointLine(line)) return Status::InvalidArgument("not a cohort-checkpoint line");
  if (line.size() > kMaxMetricLineBytes) {
    return Status::InvalidArgument(
        fmt::format("line is {} bytes, over the limit of {}", line.size(), kMaxMetricLineBytes));
  }
  auto bad = [](std::string_view field, std::string why) {
    return Status::InvalidArgument(fmt::format("{}: {}", Shown(field), why));
  };
  CheckpointMark mark;
  mark.read_time = read_time;
  bool has_path = false;
  std::string_view rest = line.substr(kCheckpointLineWord.size());
  while (auto word = NextWord(rest)) {
    std::string_view field = *word;
    size_t eq = field.find('=');
    if (eq == std::string_view::npos) return bad(field, "expected name=value (step or path)");
    std::string_view key = field.substr(0, eq);
    std::string_view text = field.substr(eq + 1);
    if (key == "step") {
      if (mark.step) return bad(key, "given twice");
      mark.step = ParseInteger(text, std::numeric_limits<int64_t>::min(),
                               std::numeric_limits<int64_t>::max());
      if (!mark.step) return bad(key, fmt::format("\"{}\" is not an integer", Shown(text)));
    } else if (key == "path") {
      if (has_path) return bad(key, "given twice");
      has_path = true;
      if (text.empty() || text.size() > kMaxCheckpointPathBytes) {
        return bad(key, fmt::format("must be 1 to {} bytes", kMaxCheckpointPathBytes));
      }
      mark.path = ValidUtf8(text);
    } else {
      return bad(key, "unknown field (step or path)");
    }
  }
  return mark;
}

}  // namespace cohort::metrics
