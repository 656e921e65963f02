#include "metrics/event_directory_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <system_error>
#include <utility>
#include <vector>

namespace cohort::metrics {

namespace fs = std::filesystem;

EventDirectoryReader::EventDirectoryReader(fs::path root, EventDirectoryLimits limits)
    : root_(std::move(root)), limits_(limits) {}

void EventDirectoryReader::ReportOnce(MetricBatch& batch, bool& reported, std::string what) {
  if (reported) return;
  reported = true;
  batch.problems.push_back(ReadProblem{"", 0, std::move(what)});
}

void EventDirectoryReader::Discover(MetricBatch& batch) {
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) return;
  std::set<std::string> seen;
  bool complete = true;
  size_t entries = 0;
  auto it =
      fs::recursive_directory_iterator(root_, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (++entries > limits_.max_entries_per_poll) {
      ReportOnce(batch, reported_too_many_entries_,
                 fmt::format("more than {} entries under the directory; the rest are not searched",
                             limits_.max_entries_per_poll));
      complete = false;
      break;
    }
    const fs::directory_entry& entry = *it;
    std::error_code entry_ec;
    if (entry.is_symlink(entry_ec)) continue;  // never followed, to a directory or a file
    if (entry.is_directory(entry_ec)) {
      if (it.depth() + 1 > limits_.max_depth) {
        it.disable_recursion_pending();
        ReportOnce(batch, reported_too_deep_,
                   fmt::format("directories more than {} levels deep are not searched",
                               limits_.max_depth));
      }
      continue;
    }
    if (!entry.is_regular_file(entry_ec)) continue;
    if (entry.path().filename().string().find("tfevents") == std::string::npos) continue;
    std::string name = entry.path().lexically_relative(root_).string();
    seen.insert(name);
    if (files_.contains(name)) continue;
    if (files_.size() >= limits_.max_files) {
      ReportOnce(
          batch, reported_too_many_files_,
          fmt::format("more than {} event files; the others are not read", limits_.max_files));
      continue;
    }
    std::string run = entry.path().parent_path().lexically_relative(root_).string();
    if (run == ".") run.clear();
    files_.emplace(name, EventFileReader(entry.path(), name, std::move(run)));
  }
  if (ec) complete = false;
  // A file that is gone is forgotten (if it comes back, it is a new file, read from the start);
  // after a search that stopped early, absence proves nothing.
  if (!complete) return;
  std::erase_if(files_, [&](const auto& file) { return !seen.contains(file.first); });
}

EventDirectoryReader::PollResult EventDirectoryReader::Poll() {
  PollResult result;
  Discover(result.batch);
  // The files in turn, starting after the one that used up the last poll's budget.
  std::vector<std::pair<const std::string, EventFileReader>*> order;
  auto start = files_.upper_bound(resume_after_);
  for (auto it = start; it != files_.end(); ++it) order.push_back(&*it);
  for (auto it = files_.begin(); it != start; ++it) order.push_back(&*it);
  resume_after_.clear();

  uint64_t left = limits_.max_bytes_per_poll;
  for (size_t i = 0; i < order.size(); ++i) {
    if (left == 0) {
      resume_after_ = order[i - 1]->first;
      result.more = true;
      break;
    }
    EventFileReader::Read read = order[i]->second.ReadNew(left);
    left -= std::min(left, read.bytes_read);
    auto& batch = result.batch;
    batch.points.insert(batch.points.end(), std::make_move_iterator(read.batch.points.begin()),
                        std::make_move_iterator(read.batch.points.end()));
    batch.problems.insert(batch.problems.end(),
                          std::make_move_iterator(read.batch.problems.begin()),
                          std::make_move_iterator(read.batch.problems.end()));
    if (read.more) {
      resume_after_ = order[i]->first;
      result.more = true;
      break;
    }
  }
  return result;
}

}  // namespace cohort::metrics
