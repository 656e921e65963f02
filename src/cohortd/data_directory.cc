#include "cohortd/data_directory.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <vector>

#include "common/strings.h"
#include "os/durable_file.h"
#include "state/sqlite_maintenance.h"

namespace cohort::cohortd {
namespace fs = std::filesystem;
namespace {

bool NonEmpty(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return !fs::is_empty(path, ec);
  return fs::exists(path, ec);
}

}  // namespace

Status CheckDataDirectory(const std::string& data_dir, const std::string& storage_root, bool init) {
  const fs::path db = fs::path(data_dir) / "cohort.db";
  std::error_code ec;
  if (fs::exists(db, ec)) {
    if (init) {
      return Status::FailedPrecondition(fmt::format(
          "--init starts a new cluster, but {} holds one ({}); nothing was changed. To start "
          "afresh, move that directory away (or back it up: cohortd backup) first",
          data_dir, db.string()));
    }
    Status intact = state::CheckDatabaseIntegrity(db.string(), kIntegrityCheckLimit);
    if (intact.code() == StatusCode::kDeadlineExceeded) {
      spdlog::warn("{}; starting without it", intact.message());
      return Status::Ok();
    }
    if (!intact.ok()) {
      return Status::Internal(fmt::format(
          "{}. The master does not write to a damaged database: stop, copy the last backup "
          "(cohortd backup) over {}, and start again",
          intact.message(), db.string()));
    }
    return Status::Ok();
  }
  std::vector<std::string> traces;
  for (const char* name : {"admin-token", "join-token", "metrics.db", "cohort.db-wal", "logs"}) {
    if (NonEmpty(fs::path(data_dir) / name)) traces.push_back((fs::path(data_dir) / name).string());
  }
  if (NonEmpty(fs::path(storage_root) / "jobs")) {
    traces.push_back((fs::path(storage_root) / "jobs").string());
  }
  if (traces.empty()) return Status::Ok();  // a first start
  if (init) {
    spdlog::warn(
        "--init: starting a new cluster in {}, over an earlier one's traces ({}); its jobs, users, "
        "tokens and secrets are forgotten, and agents must join again with the new join token",
        data_dir, Join(traces, ", "));
    return Status::Ok();
  }
  return Status::FailedPrecondition(fmt::format(
      "{} holds an earlier cluster ({}) but no cohort.db: its database was lost. Restore it "
      "(copy the cohort.db of the last `cohortd backup` to {}), or start a new cluster over it "
      "with --init (every job, user, token and secret of the old one is forgotten)",
      data_dir, Join(traces, ", "), db.string()));
}

Status BackUpDataDirectory(const std::string& data_dir, const std::string& to_dir) {
  std::error_code ec;
  fs::create_directories(to_dir, ec);
  if (ec) return Status::Internal(fmt::format("cannot create {}: {}", to_dir, ec.message()));
  const fs::path state = fs::path(data_dir) / "cohort.db";
  if (!fs::exists(state, ec)) {
    return Status::NotFound(fmt::format("{} has no cohort.db: nothing to back up", data_dir));
  }
  COHORT_RETURN_IF_ERROR(
      state::BackupDatabase(state.string(), (fs::path(to_dir) / "cohort.db").string()));
  const fs::path metrics = fs::path(data_dir) / "metrics.db";
  if (fs::exists(metrics, ec)) {
    COHORT_RETURN_IF_ERROR(
        state::BackupDatabase(metrics.string(), (fs::path(to_dir) / "metrics.db").string()));
  }
  return Status::Ok();
}

}  // namespace cohort::cohortd
