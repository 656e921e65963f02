#include "slurm/filename_pattern.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/strings.h"
#include "slurm/ascii.h"

namespace cohort::slurm {
namespace {

// Slurm pads to at most this many digits.
constexpr int kMostPadding = 10;

// `n` in at least `width` digits (0: as many as it has).
std::string Padded(int64_t n, int width) { return fmt::format("{:0{}}", n, std::max(width, 1)); }

// The letters Slurm expands; anything else after '%' stays as written.
bool IsField(char c) { return std::string_view("AabJjNnrstux").find(c) != std::string_view::npos; }

std::string Field(char c, int padding, const FilenameFields& f) {
  const int64_t array_index = f.array_task_id ? int64_t{*f.array_task_id} : kSlurmNoValue;
  switch (c) {
    case 'A':
      return Padded(f.array_job_id.value_or(f.job_id), padding);
    case 'a':
      return Padded(array_index, padding);
    case 'b':
      return Padded(array_index % 10, padding);
    case 'j':
      return Padded(f.job_id, padding);
    case 'J':
      return Padded(f.job_id, padding) + (f.step_id ? fmt::format(".{}", *f.step_id) : "");
    case 's':
      return f.step_id ? Padded(*f.step_id, padding) : "batch";
    case 'n':
      return Padded(f.node_index, padding);
    case 't':
      return Padded(f.task_id, padding);
    case 'r':
      return Padded(f.restart_count, padding);
    case 'N':
      return f.node_name.substr(0, f.node_name.find('.'));
    case 'u':
      return f.user;
    case 'x':
      return f.job_name;
  }
  return "";
}

}  // namespace

std::string ExpandFilenamePattern(std::string_view pattern, const FilenameFields& fields) {
  std::string out;
  if (!fields.work_dir.empty() && !pattern.starts_with('/')) {
    out = fields.work_dir;
    if (!out.ends_with('/')) out += '/';
  }
  if (pattern.find('\\') != std::string_view::npos) {
    std::copy_if(pattern.begin(), pattern.end(), std::back_inserter(out),
                 [](char c) { return c != '\\'; });
    return out;
  }
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      out += pattern[i];
      continue;
    }
    size_t letter = i + 1;
    while (letter < pattern.size() && IsDigit(pattern[letter])) ++letter;
    const std::string_view digits = pattern.substr(i + 1, letter - i - 1);
    if (letter == pattern.size()) {  // as Slurm: a last '%' is dropped, "%12" kept as it is
      out += digits.empty() ? "" : "%" + std::string(digits);
      break;
    }
    const char c = pattern[letter];
    if (c == '%' && digits.empty()) {
      out += '%';
    } else if (!IsField(c)) {
      out += pattern.substr(i, letter - i + 1);
    } else {
      // "%4j": zero-padded to 4; a width over 10 pads to 10, as Slurm.
      const int padding =
          digits.empty() ? 0 : std::min(kMostPadding, ParseInt(digits, 0).value_or(kMostPadding));
      out += Field(c, padding, fields);
    }
    i = letter;
  }
  return out;
}

std::string DefaultOutputPattern(bool array) { return array ? "slurm-%A_%a.out" : "slurm-%j.out"; }

}  // namespace cohort::slurm
