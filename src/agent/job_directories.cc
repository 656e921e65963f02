#include "agent/job_directories.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include "common/strings.h"
#include "os/directory.h"

namespace cohort::agent {
namespace {

struct JobDirectory {
  const std::string& path;
  const char* name;  // its last component
  mode_t mode;
};

// Why `path` is not <anything>/<job>/<name>, or nothing.
std::optional<std::string> ShapeProblem(const std::string& path, JobId job, const char* name) {
  if (path.empty() || path[0] != '/') return "is not an absolute path";
  std::vector<std::string> parts = Split(path, '/');
  for (const auto& p : parts) {
    if (p == "." || p == "..") return "must not contain a '.' or '..' component";
  }
  if (parts.size() < 3 || parts.back() != name || parts[parts.size() - 2] != std::to_string(job)) {
    return fmt::format("does not end in /{}/{}: the agent gives a job's user no other directory",
                       job, name);
  }
  return std::nullopt;
}

}  // namespace

StatusOr<std::vector<std::string>> PrepareJobDirectories(const TaskLaunch& launch,
                                                         const Account& account, bool as_root) {
  const JobDirectory dirs[] = {{launch.checkpoint_dir, "checkpoints", 0700},
                               {launch.output_dir, "outputs", 0750},
                               {launch.log_dir, "logs", 0700}};
  // All checked before any is touched.
  for (const JobDirectory& d : dirs) {
    if (d.path.empty()) continue;
    if (auto problem = ShapeProblem(d.path, launch.id.job, d.name)) {
      return Status::FailedPrecondition(
          fmt::format("the job's {} directory \"{}\" {}", d.name, d.path, *problem));
    }
  }
  std::vector<std::string> prepared;
  for (const JobDirectory& d : dirs) {
    if (d.path.empty()) continue;
    std::optional<Owner> owner;
    if (as_root) owner = Owner{account.uid, account.gid};
    Status s = EnsureDirectory(d.path, d.mode, owner);
    if (!s.ok()) {
      return Status::FailedPrecondition(fmt::format("cannot give the job's {} directory to {}: {}",
                                                    d.name, account.name, s.message()));
    }
    prepared.push_back(d.path);
  }
  return prepared;
}

}  // namespace cohort::agent
