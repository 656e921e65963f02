// Task logs shipped by agents: stored at an offset, idempotently, durable before the answer.
#include "master/master.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace cohort::master {

namespace fs = std::filesystem;

// --- Logs ---

std::string Master::LogPath(JobId id, int attempt, const std::string& role, int index) const {
  return fmt::format("{}/logs/{}/{}/{}.{}.log", config_.data_dir, id, attempt, role, index);
}

StatusOr<int64_t> Master::AppendLog(const std::string& node_id, const TaskId& task, int64_t offset,
                                    std::string_view data) {
  const TaskId* key = &task;
  auto job_it = jobs_.find(key->job);
  if (job_it == jobs_.end())
    return Status::NotFound(fmt::format("job {} does not exist", key->job));
  if (key->attempt < 1 || key->attempt > job_it->second.attempt) {
    return Status::NotFound(fmt::format("job {} has no attempt {}", key->job, key->attempt));
  }
  // The key names a file: it must be one of the job's tasks, nothing else.
  // (Elastic replicas get ever higher indices: any index of an elastic role will do.)
  bool known = std::any_of(job_it->second.spec.tasks.begin(), job_it->second.spec.tasks.end(),
                           [&](const TaskGroupSpec& g) {
                             return g.role == key->role && key->index >= 0 &&
                                    (key->index < g.replicas || g.elastic());
                           });
  if (!known) {
    return Status::NotFound(
        fmt::format("job {} has no task {}/{}", key->job, key->role, key->index));
  }
  std::string path = LogPath(key->job, key->attempt, key->role, key->index);
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return Status::Internal(fmt::format("creating log directory: {}", ec.message()));
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Internal(fmt::format("opening {}: {}", path, strerror(errno)));
  struct stat st {};
  ::fstat(fd, &st);
  int64_t size = st.st_size;
  if (offset > size) {
    ::close(fd);
    return Status::FailedPrecondition(
        fmt::format("log of {} has {} bytes; send from offset {}", task.ToString(), size, size));
  }
  int64_t skip = size - offset;
  if (skip < static_cast<int64_t>(data.size())) {
    std::string_view rest = data.substr(static_cast<size_t>(skip));
    while (!rest.empty()) {
      ssize_t n = ::write(fd, rest.data(), rest.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        std::string err = strerror(errno);
        ::close(fd);
        return Status::Internal(fmt::format("writing {}: {}", path, err));
      }
      rest.remove_prefix(static_cast<size_t>(n));
    }
    // Acknowledged log lines must survive a crash of the master.
    ::fdatasync(fd);
    size = offset + static_cast<int64_t>(data.size());
  }
  ::close(fd);
  (void)node_id;
  return size;
}

}  // namespace cohort::master
