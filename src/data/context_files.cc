#include "data/context_files.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <vector>

#include "common/units.h"
#include "data/ignore_rules.h"
#include "store/file_tree.h"

namespace cohort::data {
namespace {

// The rules of `dir`'s .cohortignore, read without following a link; the defaults without one.
StatusOr<IgnoreRules> RulesOf(const std::string& dir) {
  auto file = store::OpenBeneath(dir, kIgnoreFile);
  if (!file.ok()) {
    if (file.status().code() == StatusCode::kNotFound) return IgnoreRules::Parse(kDefaultIgnore);
    return file.status();
  }
  std::string text;
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(file->fd(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > (size_t{1} << 20)) {
      return Status::InvalidArgument(fmt::format(
          "{}/{}: more than 1Mi; a .cohortignore is a list of patterns", dir, kIgnoreFile));
    }
  }
  auto rules = IgnoreRules::Parse(text);
  if (!rules.ok()) {
    return Status::InvalidArgument(
        fmt::format("{}/{}: {}", dir, kIgnoreFile, rules.status().message()));
  }
  return rules;
}

// "data/ (3.2Gi), model.pt (410Mi)": where the bytes are, by entry at the top.
std::string Largest(const store::Tree& tree) {
  std::map<std::string, int64_t> by_top;
  for (const auto& f : tree.files) {
    size_t slash = f.path.find('/');
    by_top[slash == std::string::npos ? f.path : f.path.substr(0, slash + 1)] += f.size;
  }
  std::vector<std::pair<std::string, int64_t>> sorted(by_top.begin(), by_top.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> named;
  for (size_t i = 0; i < sorted.size() && i < 3; ++i) {
    named.push_back(
        fmt::format("{} ({})", sorted[i].first, FormatByteSizeApprox(sorted[i].second)));
  }
  return fmt::format("{}", fmt::join(named, ", "));
}

}  // namespace

StatusOr<DatasetScan> ScanContext(const std::string& dir, const HashProgress& progress) {
  COHORT_ASSIGN_OR_RETURN(IgnoreRules rules, RulesOf(dir));
  auto listed = store::ListTree(
      dir, store::kMaxContextFiles,
      [&](const std::string& path, bool is_dir) { return !rules.Ignored(path, is_dir); });
  const std::string what_to_do = fmt::format(
      "leave out what the job does not need in {}/{} (the rules of .gitignore), send another "
      "directory with --context DIR, or none with --no-context; put data in a dataset (cohort "
      "data put) rather than in the code",
      dir, kIgnoreFile);
  if (!listed.ok()) {
    if (listed.status().code() != StatusCode::kResourceExhausted) return listed.status();
    return Status::ResourceExhausted(
        fmt::format("the code to send, {}, holds more than {} files: {}", dir,
                    store::kMaxContextFiles, what_to_do));
  }
  if (listed->bytes > store::kMaxContextBytes) {
    return Status::ResourceExhausted(
        fmt::format("the code to send, {}, is {}, more than the {} a job's code may be; the "
                    "most is in {}: {}",
                    dir, FormatByteSizeApprox(listed->bytes),
                    FormatByteSizeApprox(store::kMaxContextBytes), Largest(*listed), what_to_do));
  }
  return HashTree(dir, std::move(*listed), progress);
}

}  // namespace cohort::data
