#include "slurm/batch_script.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "slurm/ascii.h"

namespace cohort::slurm {
namespace {

constexpr std::string_view kDirective = "#SBATCH";
constexpr std::string_view kOldDirective = "#SLURM";

// Whether a line stops the reading of directives: it holds something before any '#'.
bool IsCommand(std::string_view line) {
  const auto first = std::find_if_not(line.begin(), line.end(), IsSpace);
  return first != line.end() && *first != '#';
}

// "hetjob" or the older "packjob", alone or before whitespace: the next heterogeneous job
// component starts here.
bool IsComponentSeparator(std::string_view args) {
  const auto first = std::find_if_not(args.begin(), args.end(), IsSpace);
  const std::string_view rest = args.substr(first - args.begin());
  for (std::string_view word : {"hetjob", "packjob"}) {
    if (rest.size() < word.size()) continue;
    bool same = true;
    for (size_t i = 0; i < word.size(); ++i) {
      same = same && (rest[i] | 0x20) == word[i];  // ASCII, case-insensitive as Slurm
    }
    if (same && (rest.size() == word.size() || IsSpace(rest[word.size()]))) return true;
  }
  return !rest.empty() && rest[0] == ':';
}

Status LineError(int line, std::string_view what) {
  return Status::InvalidArgument(fmt::format("line {}: {}", line, what));
}

}  // namespace

StatusOr<std::vector<std::string>> SplitDirective(std::string_view text, int line) {
  std::vector<std::string> arguments;
  size_t i = 0;
  while (true) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    if (i >= text.size()) return arguments;
    std::string argument;
    bool any = false;  // something was read, if only "": an argument
    char quote = 0;
    for (; i < text.size() && (quote || !IsSpace(text[i])); ++i) {
      const char c = text[i];
      if (c == '\\') {
        // The next character as it is; a backslash that ends the line stands for nothing.
        if (i + 1 == text.size()) {
          i = text.size();
          break;
        }
        argument += text[++i];
        any = true;
      } else if (quote) {
        if (c == quote) {
          quote = 0;
        } else {
          argument += c;
        }
      } else if (c == '\'' || c == '"') {
        quote = c;
        any = true;
      } else if (c == '#') {
        if (any) arguments.push_back(std::move(argument));
        return arguments;  // the rest of the line is a comment
      } else {
        argument += c;
        any = true;
      }
    }
    if (quote) {
      return LineError(line, fmt::format("the quote {} is never closed", quote));
    }
    if (any) arguments.push_back(std::move(argument));
  }
}

StatusOr<BatchScript> ReadBatchScript(std::string_view text) {
  if (text.size() > kMaxBatchScriptBytes) {
    return Status::InvalidArgument(
        fmt::format("the batch script is {} bytes, more than the {} MiB a script may be",
                    text.size(), kMaxBatchScriptBytes >> 20));
  }
  if (text.empty()) return Status::InvalidArgument("Batch script is empty!");
  if (std::all_of(text.begin(), text.end(), IsSpace)) {
    return Status::InvalidArgument("Batch script contains only whitespace!");
  }
  if (!text.starts_with("#!")) {
    return Status::InvalidArgument(
        "This does not look like a batch script. The first line must start with #! followed by "
        "the path to an interpreter. For instance: #!/bin/sh");
  }
  auto line_of = [&](size_t offset) {
    return 1 + static_cast<int>(std::count(text.begin(), text.begin() + offset, '\n'));
  };
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return LineError(line_of(nul), "a batch script may not contain a NUL character ('\\0')");
  }
  if (size_t crlf = text.find("\r\n"); crlf != std::string_view::npos) {
    return LineError(line_of(crlf),
                     "Batch script contains DOS line breaks (\\r\\n) instead of expected UNIX "
                     "line breaks (\\n).");
  }

  BatchScript script;
  bool warned_old_directive = false;
  size_t start = 0;
  for (int line = 1; start < text.size(); ++line) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view content = text.substr(start, end - start);
    start = end + 1;
    if (line == 1) {
      script.interpreter = std::string(content.substr(2));
      continue;
    }
    std::optional<std::string_view> args;
    if (content.starts_with(kDirective)) {
      args = content.substr(kDirective.size());
    } else if (content.starts_with(kOldDirective)) {
      args = content.substr(kOldDirective.size());
      if (!warned_old_directive) {
        script.warnings.push_back(fmt::format(
            "line {}: #SLURM is read as #SBATCH, as Slurm does; change it to #SBATCH", line));
        warned_old_directive = true;
      }
    }
    if (!args) {
      if (IsCommand(content)) break;  // no directive is read after the first command
      continue;
    }
    if (content.size() > kMaxDirectiveLineBytes) {
      return LineError(line, fmt::format("the #SBATCH line is {} bytes, more than the {} KiB a "
                                         "directive line may be",
                                         content.size(), kMaxDirectiveLineBytes >> 10));
    }
    if (IsComponentSeparator(*args)) {
      return LineError(line,
                       "heterogeneous jobs (components separated by \"#SBATCH hetjob\" or \":\") "
                       "are not supported; submit each component as a job of its own");
    }
    COHORT_ASSIGN_OR_RETURN(auto arguments, SplitDirective(*args, line));
    if (!arguments.empty()) script.directives.push_back({line, std::move(arguments)});
  }
  return script;
}

}  // namespace cohort::slurm
