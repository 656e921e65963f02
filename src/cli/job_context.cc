#include "cli/job_context.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>

#include "cli/chunk_upload.h"
#include "cli/cli.h"
#include "common/units.h"
#include "data/context_files.h"
#include "model/dataset.h"

namespace cohort::cli {

void AddContextOptions(CLI::App* cmd, ContextOptions& o) {
  auto* dir = cmd->add_option(
      "--context", o.dir,
      "The directory whose files are the job's code, unpacked where each task starts (default: "
      "the current directory; .cohortignore leaves files out; at most 100Mi). Not sent when "
      "every task group names a workdir");
  cmd->add_flag("--no-context", o.none, "Send no code: tasks start in an empty directory")
      ->excludes(dir);
}

Status AttachContext(client::CohortClient& c, const ContextOptions& o, Json& spec) {
  if (o.none) return Status::Ok();
  bool needed = false;
  if (auto tasks = spec.find("tasks"); tasks != spec.end() && tasks->is_array()) {
    for (const auto& group : *tasks) needed |= !group.is_object() || !group.contains("workdir");
  }
  if (!needed) {
    if (!o.dir.empty()) {
      fmt::print(stderr, "the code in {} is not sent: every task group names a workdir\n", o.dir);
    }
    return Status::Ok();
  }
  std::error_code ec;
  const std::string dir = o.dir.empty() ? std::filesystem::current_path(ec).string() : o.dir;
  if (ec) return Status::Internal(fmt::format("the current directory: {}", ec.message()));
  Progress progress;
  auto last = std::chrono::steady_clock::time_point{};
  auto scan = data::ScanContext(dir, [&](int64_t done, int64_t total) {
    auto now = std::chrono::steady_clock::now();
    if (done != total && now - last < std::chrono::milliseconds(100)) return;
    last = now;
    progress.Update(fmt::format("hashing the code: {}/{}", FormatByteSizeApprox(done),
                                FormatByteSizeApprox(total)));
  });
  progress.Done();
  if (!scan.ok()) {
    return Status(scan.status().code(), fmt::format("--context: {}", scan.status().message()));
  }
  if (scan->files.empty()) return Status::Ok();
  COHORT_ASSIGN_OR_RETURN(ChunksSent sent, SendMissingChunks(c, dir, *scan));
  COHORT_ASSIGN_OR_RETURN(Json committed,
                          Retrying([&] { return c.CommitContext(DatasetFilesJson(scan->files)); }));
  spec["context"] = committed["context"];
  fmt::print(stderr, "code: {} file{} ({}) from {}, {} sent{}\n", scan->files.size(),
             scan->files.size() == 1 ? "" : "s", FormatByteSizeApprox(scan->bytes), dir,
             FormatByteSizeApprox(sent.bytes),
             scan->skipped_count > 0
                 ? fmt::format("; left out {} links or special files", scan->skipped_count)
                 : "");
  return Status::Ok();
}

}  // namespace cohort::cli
