#include "master/log_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

#include "common/strings.h"

namespace cohort::master {
namespace {

namespace fs = std::filesystem;

std::string Errno() { return std::strerror(errno); }

// Closes on every path out of a function; Close() reports the error where it matters.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  // False (with errno set) if closing failed.
  bool Close() {
    int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

// Makes the directory entries under `dir` durable (a new file or subdirectory).
Status SyncDirectory(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.ok()) return Status::Internal(fmt::format("opening {}: {}", dir, Errno()));
  if (::fsync(fd.get()) != 0) return Status::Internal(fmt::format("syncing {}: {}", dir, Errno()));
  if (!fd.Close()) return Status::Internal(fmt::format("closing {}: {}", dir, Errno()));
  return Status::Ok();
}

// Creates one directory level if it is missing, durably.
Status MakeDirectory(const std::string& parent, const std::string& name) {
  std::string path = parent + "/" + name;
  if (::mkdir(path.c_str(), 0755) == 0) return SyncDirectory(parent);
  if (errno == EEXIST) return Status::Ok();  // a file in its place fails at the next open
  return Status::Internal(fmt::format("creating {}: {}", path, Errno()));
}

// A TaskId names a file: refuse anything that could reach outside the store.
Status CheckTask(const TaskId& task) {
  if (task.job < 1 || task.attempt < 1 || task.index < 0 || !IsValidRole(task.role)) {
    return Status::InvalidArgument(fmt::format("\"{}\" does not name a task log", task.ToString()));
  }
  return Status::Ok();
}

Status CheckOffset(int64_t offset) {
  if (offset < 0) return Status::InvalidArgument(fmt::format("offset {} is negative", offset));
  return Status::Ok();
}

}  // namespace

LogStore::LogStore(std::string dir) : dir_(std::move(dir)) {}

std::string LogStore::PathOf(const TaskId& task) const {
  return fmt::format("{}/{}/{}/{}.{}.log", dir_, task.job, task.attempt, task.role, task.index);
}

StatusOr<int64_t> LogStore::Append(const TaskId& task, int64_t offset, std::string_view data) {
  COHORT_RETURN_IF_ERROR(CheckTask(task));
  COHORT_RETURN_IF_ERROR(CheckOffset(offset));
  auto gap = [&](int64_t size) {
    return Status::FailedPrecondition(
        fmt::format("log of {} has {} bytes; send from offset {}", task.ToString(), size, size));
  };
  std::string path = PathOf(task);
  int raw = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  bool created = false;
  if (raw < 0 && errno == ENOENT) {
    if (offset > 0) return gap(0);
    if (data.empty()) return 0;
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) return Status::Internal(fmt::format("creating {}: {}", dir_, ec.message()));
    std::string job_dir = fmt::format("{}/{}", dir_, task.job);
    COHORT_RETURN_IF_ERROR(MakeDirectory(dir_, std::to_string(task.job)));
    COHORT_RETURN_IF_ERROR(MakeDirectory(job_dir, std::to_string(task.attempt)));
    raw = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    created = true;
  }
  Fd fd(raw);
  if (!fd.ok()) return Status::Internal(fmt::format("opening {}: {}", path, Errno()));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return Status::Internal(fmt::format("reading the size of {}: {}", path, Errno()));
  }
  int64_t size = st.st_size;
  if (offset > size) return gap(size);
  int64_t skip = size - offset;
  bool grew = skip < static_cast<int64_t>(data.size());
  if (grew) {
    std::string_view rest = data.substr(static_cast<size_t>(skip));
    while (!rest.empty()) {
      ssize_t n = ::write(fd.get(), rest.data(), rest.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::Internal(fmt::format("writing {}: {}", path, Errno()));
      }
      rest.remove_prefix(static_cast<size_t>(n));
    }
    size = offset + static_cast<int64_t>(data.size());
  }
  // Acknowledged log lines must survive a crash of the master.
  if (grew && ::fdatasync(fd.get()) != 0) {
    return Status::Internal(fmt::format("syncing {}: {}", path, Errno()));
  }
  if (!fd.Close()) return Status::Internal(fmt::format("closing {}: {}", path, Errno()));
  if (created) COHORT_RETURN_IF_ERROR(SyncDirectory(fs::path(path).parent_path().string()));
  if (grew) subscribers_.Notify(task.job);
  return size;
}

StatusOr<int64_t> LogStore::Size(const TaskId& task) const {
  COHORT_RETURN_IF_ERROR(CheckTask(task));
  std::string path = PathOf(task);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return 0;
    return Status::Internal(fmt::format("reading the size of {}: {}", path, Errno()));
  }
  return static_cast<int64_t>(st.st_size);
}

StatusOr<std::string> LogStore::Read(const TaskId& task, int64_t offset, size_t max_bytes) const {
  COHORT_RETURN_IF_ERROR(CheckTask(task));
  COHORT_RETURN_IF_ERROR(CheckOffset(offset));
  std::string path = PathOf(task);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) {
    if (errno == ENOENT) return std::string();
    return Status::Internal(fmt::format("opening {}: {}", path, Errno()));
  }
  std::string out(max_bytes, '\0');
  size_t got = 0;
  while (got < max_bytes) {
    ssize_t n = ::pread(fd.get(), out.data() + got, max_bytes - got,
                        static_cast<off_t>(offset + static_cast<int64_t>(got)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Internal(fmt::format("reading {}: {}", path, Errno()));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

StatusOr<std::vector<TaskId>> LogStore::TasksWithLogs(JobId job, int attempt) const {
  std::string dir = fmt::format("{}/{}/{}", dir_, job, attempt);
  std::vector<TaskId> tasks;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec == std::errc::no_such_file_or_directory) return tasks;
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    auto parts = Split(it->path().filename().string(), '.');  // role.index.log
    if (parts.size() != 3 || parts[2] != "log" || !IsValidRole(parts[0])) continue;
    auto index = ParseInteger(parts[1], 0, std::numeric_limits<int>::max());
    if (!index) continue;
    tasks.push_back(TaskId{job, attempt, parts[0], static_cast<int>(*index)});
  }
  if (ec) return Status::Internal(fmt::format("listing {}: {}", dir, ec.message()));
  std::sort(tasks.begin(), tasks.end());
  return tasks;
}

LogStore::SubscriptionId LogStore::Subscribe(JobId job, std::function<void()> callback) {
  return subscribers_.Subscribe(job, std::move(callback));
}

void LogStore::Unsubscribe(SubscriptionId id) { subscribers_.Unsubscribe(id); }

}  // namespace cohort::master
