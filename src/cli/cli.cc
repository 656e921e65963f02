#include "cli/cli.h"
#include "cli/credentials.h"
#include "common/strings.h"
#include "model/job_array.h"
#include "model/job_spec_parser.h"
#include "model/limits.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cohort::cli {

std::string MasterUrl(const GlobalOptions& g) {
  if (!g.master.empty()) return g.master;
  const char* env = std::getenv("COHORT_MASTER");
  if (env && *env) return env;
  return client::kDefaultMasterUrl;
}

std::string Token(const GlobalOptions& g) {
  if (!g.token.empty()) return g.token;
  return SavedToken(MasterUrl(g)).value_or("");
}

StatusOr<std::unique_ptr<client::CohortClient>> Connect(const GlobalOptions& g) {
  return client::CohortClient::Create(MasterUrl(g), Token(g), client::TlsOptions{g.ca_file});
}

StatusOr<JobId> ResolveJob(client::CohortClient& c, const std::string& text) {
  size_t underscore = text.find('_');
  if (underscore == std::string::npos) return ParseJobId(text);
  const std::string array_text = text.substr(0, underscore);
  const std::string index_text = text.substr(underscore + 1);
  auto array = ParseJobId(array_text);
  auto index = ParseInteger(index_text, 0, kMaxArrayIndex);
  if (!array.ok() || !index) {
    return Status::InvalidArgument(
        fmt::format("\"{}\": an array's job is ARRAY_INDEX, e.g. 12_3", text));
  }
  COHORT_ASSIGN_OR_RETURN(Json doc, c.GetArray(*array));
  for (const auto& j : doc["jobs"]) {
    if (j["index"].get<int64_t>() == *index) return j["job_id"].get<JobId>();
  }
  return Status::NotFound(fmt::format("array {} has no index {}", *array, *index));
}

int Fail(const std::string& command, const Status& status) {
  fmt::print(stderr, "cohort {}: {}\n", command, status.message());
  for (const auto& d : status.details()) fmt::print(stderr, "  {}\n", d);
  return 1;
}

void Finish(int rc) {
  if (rc != 0) throw CLI::RuntimeError(rc);
}

namespace {

// A finite number; above `min`, or from it on when `or_equal`.
CLI::Validator NumberBound(double min, bool or_equal) {
  std::string bound =
      or_equal ? fmt::format("of {:g} or more", min) : fmt::format("above {:g}", min);
  return CLI::Validator(
      [min, or_equal, bound](std::string& text) -> std::string {
        char* end = nullptr;
        double v = std::strtod(text.c_str(), &end);
        bool number = end != text.c_str() && *end == '\0' && std::isfinite(v);
        if (number && (or_equal ? v >= min : v > min)) return "";
        return fmt::format("must be a number {}, got {}", bound, text);
      },
      fmt::format("NUMBER {} {:g}", or_equal ? ">=" : ">", min));
}

}  // namespace

CLI::Validator NumberAbove(double min) { return NumberBound(min, false); }
CLI::Validator NumberFrom(double min) { return NumberBound(min, true); }

std::optional<std::string> FindOnPath(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = fmt::format("{}/{}", dir, name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

StatusOr<Json> SignInLink(client::CohortClient& c) {
  COHORT_ASSIGN_OR_RETURN(Json link, c.CreateSignInCode());
  if (!link.contains("url") || !link["url"].is_string()) {
    return Status::Internal("the master's answer has no sign-in url");
  }
  return link;
}

void AddOutputOption(CLI::App* cmd, std::string& output) {
  cmd->add_option("-o,--output", output, "Output format: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
}

void Table::Print(std::FILE* out) const {
  std::vector<size_t> widths;
  for (const auto& row : rows_) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    fmt::print(out, "{}\n", line);
  }
}

Progress::Progress() : tty_(::isatty(STDERR_FILENO) == 1) {}
Progress::~Progress() { Done(); }

void Progress::Update(const std::string& line) {
  if (!tty_) return;
  fmt::print(stderr, "\r\033[K{}", line);
  std::fflush(stderr);
  shown_ = true;
}

void Progress::Done() {
  if (!tty_ || !shown_) return;
  fmt::print(stderr, "\n");
  shown_ = false;
}

std::string ShortDuration(Duration d) {
  int64_t s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (s < 0) s = 0;
  if (s < 120) return fmt::format("{}s", s);
  if (s < 2 * 3600) return fmt::format("{}m", s / 60);
  if (s < 2 * 86400) return fmt::format("{}h", s / 3600);
  return fmt::format("{}d", s / 86400);
}

std::string NodeStateText(const Json& node) {
  std::string state = node["state"].get<std::string>();
  if (node.value("drained", false)) state += ",DRAINED";
  return state;
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string CsvValue(const Json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return CsvField(v.get<std::string>());
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  return v.dump();
}

// The text of a spec file; never more than a spec may be (a device or a pipe may not say how
// much it holds).
StatusOr<std::string> ReadSpecFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument(
        fmt::format("{}: is a directory, not a spec file; give the YAML or JSON file in it", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  std::string text(static_cast<size_t>(kMaxSpecBytes) + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) {
    return Status::Unavailable(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  }
  text.resize(static_cast<size_t>(in.gcount()));
  if (static_cast<int64_t>(text.size()) > kMaxSpecBytes) {
    auto size = std::filesystem::file_size(path, ec);
    return Status::InvalidArgument(
        fmt::format("{}: {}", path, ec ? SpecTooLarge(text.size()) : SpecTooLarge(size)));
  }
  return text;
}

}  // namespace cohort::cli
