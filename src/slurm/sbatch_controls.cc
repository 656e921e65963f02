#include "slurm/sbatch_controls.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdint>

#include "common/strings.h"
#include "slurm/ascii.h"

namespace cohort::slurm {
namespace {

struct SignalName {
  const char* name;
  int number;
};
// The signals Slurm knows by name (proc_args.c, signals_mapping).
constexpr std::array<SignalName, 18> kSignalNames = {{
    {"HUP", SIGHUP},
    {"INT", SIGINT},
    {"QUIT", SIGQUIT},
    {"ABRT", SIGABRT},
    {"KILL", SIGKILL},
    {"ALRM", SIGALRM},
    {"TERM", SIGTERM},
    {"CHLD", SIGCHLD},
    {"USR1", SIGUSR1},
    {"USR2", SIGUSR2},
    {"PIPE", SIGPIPE},
    {"URG", SIGURG},
    {"CONT", SIGCONT},
    {"STOP", SIGSTOP},
    {"TSTP", SIGTSTP},
    {"TTIN", SIGTTIN},
    {"TTOU", SIGTTOU},
    {"XCPU", SIGXCPU},
}};
constexpr int kMaxSignal = 64;
constexpr int kMaxSignalSeconds = 65535;

std::string SignalNameOf(int number) {
  for (const auto& s : kSignalNames) {
    if (s.number == number) return s.name;
  }
  return std::to_string(number);
}

bool IsVariableName(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return c == '_' || IsDigit(c) || IsLetter(c); });
}

// Items separated by commas outside quotes; an item wholly in quotes loses them (as Slurm's
// find_quote_token). Nothing when a quote is never closed.
std::optional<std::vector<std::string>> QuotedItems(std::string_view text) {
  std::vector<std::string> items;
  std::string item;
  char quote = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && !quote)) {
      if (item.size() >= 2 && (item[0] == '\'' || item[0] == '"') && item.back() == item[0]) {
        item = item.substr(1, item.size() - 2);
      }
      items.push_back(std::move(item));
      item.clear();
      continue;
    }
    if (text[i] == '\'' || text[i] == '"') {
      if (!quote) {
        quote = text[i];
      } else if (quote == text[i]) {
        quote = 0;
      }
    }
    item += text[i];
  }
  if (quote) return std::nullopt;
  return items;
}

}  // namespace

StatusOr<SignalSpec> ParseSignalSpec(std::string_view text) {
  SignalSpec spec;
  std::string_view rest = text;
  // Slurm reads R, then B, then R again, one letter each in any case, then an optional ':'.
  auto flag = [&](char letter, bool& set) {
    if (!rest.empty() && Lower(rest[0]) == letter) {
      set = true;
      rest.remove_prefix(1);
    }
  };
  flag('r', spec.reservation_overlap);
  flag('b', spec.batch_shell_only);
  flag('r', spec.reservation_overlap);
  if (rest.starts_with(':')) rest.remove_prefix(1);

  const size_t at = rest.find('@');
  std::string_view signal = rest.substr(0, at);
  if (AllDigits(signal)) {
    spec.number = ParseInt(signal, 1, kMaxSignal).value_or(0);
  } else {
    if (Lowered(signal.substr(0, 3)) == "sig") signal.remove_prefix(3);
    for (const auto& s : kSignalNames) {
      if (SameIgnoringCase(signal, s.name)) spec.number = s.number;
    }
  }
  if (spec.number == 0) {
    return Status::InvalidArgument(fmt::format(
        "\"{}\": \"{}\" is not a signal; give a number from 1 to {} or a name such as USR1, "
        "TERM or SIGINT",
        text, rest.substr(0, at), kMaxSignal));
  }
  spec.name = SignalNameOf(spec.number);
  if (at != std::string_view::npos) {
    auto seconds = ParseInt(rest.substr(at + 1), 0, kMaxSignalSeconds);
    if (!seconds) {
      return Status::InvalidArgument(
          fmt::format("\"{}\": the time after '@' must be a number of seconds from 0 to {}", text,
                      kMaxSignalSeconds));
    }
    spec.before_end = std::chrono::seconds(*seconds);
  }
  return spec;
}

StatusOr<std::vector<Dependency>> ParseDependencyList(std::string_view text) {
  auto fail = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format("\"{}\": {}", text, why));
  };
  if (text.find('?') != std::string_view::npos) {
    return fail(
        "'?' (start when any one is met) is not supported: Cohort waits for every dependency; "
        "separate them with ','");
  }
  std::vector<Dependency> dependencies;
  for (const std::string& item : Split(text, ',')) {
    if (Lowered(item).starts_with("singleton")) {
      return fail("singleton (one job of a name and user at a time) is not supported");
    }
    const size_t colon = item.find(':');
    std::string type = Lowered(std::string_view(item).substr(0, colon));
    std::string_view ids =
        colon == std::string::npos ? "" : std::string_view(item).substr(colon + 1);
    if (colon == std::string::npos && AllDigits(item)) {
      type = "afterany";  // a bare job id: Slurm's old form, its default type
      ids = item;
    }
    DependencyCondition on = DependencyCondition::kEnd;
    if (type == "afterok") {
      on = DependencyCondition::kSuccess;
    } else if (type == "afternotok") {
      on = DependencyCondition::kFailure;
    } else if (type == "afterany") {
      on = DependencyCondition::kEnd;
    } else if (type == "after") {
      return fail(
          "after (once a job has started) is not supported; use afterok, afternotok or "
          "afterany, which wait for its end");
    } else if (type == "aftercorr") {
      return fail(
          "aftercorr (each array element after its peer) is not supported; use afterok "
          "on the whole array");
    } else if (type == "afterburstbuffer" || type == "expand") {
      return fail(fmt::format("{} is not supported", type));
    } else {
      return fail(fmt::format(
          "\"{}\" is not a dependency; use afterok:ID, afternotok:ID or afterany:ID", item));
    }
    for (const std::string& id : Split(ids, ':')) {
      if (id.find('+') != std::string::npos) {
        return fail(fmt::format("\"{}\": a delay after a job (+minutes) is not supported", id));
      }
      if (id.find('_') != std::string::npos) {
        return fail(fmt::format(
            "\"{}\": a dependency on one element of an array (ID_INDEX) is not supported", id));
      }
      auto job = AllDigits(id) ? ParseInteger(id, 1, INT64_MAX) : std::nullopt;
      if (!job) return fail(fmt::format("\"{}\" is not a job id", id));
      // A job named again: both conditions must hold, and a job spec names each job once. The
      // stricter stays (success or failure over any end); success and failure never both hold.
      const auto same = std::find_if(dependencies.begin(), dependencies.end(),
                                     [&](const Dependency& d) { return d.job == *job; });
      if (same == dependencies.end()) {
        dependencies.push_back({*job, on});
      } else if (same->on == DependencyCondition::kEnd) {
        same->on = on;
      } else if (on != DependencyCondition::kEnd && on != same->on) {
        return fail(fmt::format(
            "job {} must both succeed (afterok) and fail (afternotok), which it never can", *job));
      }
    }
  }
  if (dependencies.size() > kMaxJobDependencies) {
    return fail(fmt::format("a job may depend on at most {} jobs", kMaxJobDependencies));
  }
  return dependencies;
}

StatusOr<ExportSpec> ParseExportSpec(std::string_view text) {
  auto items = QuotedItems(text);
  if (!items) {
    return Status::InvalidArgument(fmt::format("\"{}\": a quote is never closed", text));
  }
  ExportSpec spec;
  bool all = false;
  for (const std::string& item : *items) {
    if (SameIgnoringCase(item, "ALL")) {
      all = true;
      continue;
    }
    if (SameIgnoringCase(item, "NONE") || SameIgnoringCase(item, "NIL")) {
      if (items->size() > 1) {
        return Status::InvalidArgument(fmt::format(
            "\"{}\": {} takes no variables; list them alone (e.g. --export=PATH,SEED=1)", text,
            item));
      }
      spec.base = SameIgnoringCase(item, "NONE") ? ExportSpec::Base::kNone : ExportSpec::Base::kNil;
      return spec;
    }
    const size_t equals = item.find('=');
    ExportVariable variable{item.substr(0, equals), std::nullopt};
    if (!IsVariableName(variable.name)) {
      return Status::InvalidArgument(fmt::format(
          "\"{}\": \"{}\" is not NAME or NAME=value (a name is letters, digits and '_')", text,
          item));
    }
    if (equals != std::string::npos) variable.value = item.substr(equals + 1);
    spec.variables.push_back(std::move(variable));
  }
  spec.base = all ? ExportSpec::Base::kAll : ExportSpec::Base::kNone;
  return spec;
}

StatusOr<OpenMode> ParseOpenMode(std::string_view text) {
  const char first = text.empty() ? 0 : Lower(text[0]);
  if (first == 'a') return OpenMode::kAppend;
  if (first == 't') return OpenMode::kTruncate;
  return Status::InvalidArgument(fmt::format("\"{}\": give append or truncate", text));
}

StatusOr<bool> ParseYesNo(std::string_view text) {
  if (SameIgnoringCase(text, "yes")) return true;
  if (SameIgnoringCase(text, "no")) return false;
  return Status::InvalidArgument(fmt::format("\"{}\": give yes or no", text));
}

}  // namespace cohort::slurm
