#include "master/log_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "common/strings.h"
#include "common/units.h"
#include "os/durable_file.h"

namespace cohort::master {
namespace {

namespace fs = std::filesystem;

// Logs read back from their files are cached; past this many, the cache starts over (it is
// only a cache: the files are the truth).
constexpr size_t kMaxCachedLogs = 4096;
constexpr int kOffsetDigits = 20;  // INT64_MAX has 19

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

// Creates one directory level if it is missing, durably.
Status MakeDirectory(const std::string& parent, const std::string& name) {
  std::string path = parent + "/" + name;
  if (::mkdir(path.c_str(), 0755) == 0) return SyncDirectory(parent);
  if (errno == EEXIST) return Status::Ok();  // a file in its place fails at the next open
  return Status::Internal(fmt::format("creating {}: {}", path, Errno()));
}

// A TaskId names files: refuse anything that could reach outside the store.
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

std::string Bytes(int64_t n) {
  return n < 1024 ? fmt::format("{} bytes", n) : FormatByteSizeApprox(n) + "B";
}

// "00000000000000001024.log" -> 1024; nothing for any other name.
std::optional<int64_t> SegmentStart(const std::string& name) {
  if (name.size() != kOffsetDigits + 4 || name.substr(kOffsetDigits) != ".log") return {};
  return ParseInteger(name.substr(0, kOffsetDigits), 0, std::numeric_limits<int64_t>::max());
}

}  // namespace

LogLimits LogLimits::For(int64_t per_task) {
  LogLimits limits;
  limits.per_task = per_task;
  limits.segment = std::clamp<int64_t>(per_task / 8, 1, int64_t{32} << 20);
  return limits;
}

std::string DroppedMarker(int64_t dropped, int64_t limit) {
  return fmt::format("[cohort: {} of earlier output dropped (log limit {})]", Bytes(dropped),
                     Bytes(limit));
}

int64_t LogStore::TaskLog::size() const {
  return segments.empty() ? 0 : segments.back().start + segments.back().length;
}

int64_t LogStore::TaskLog::stored() const {
  int64_t total = 0;
  for (const auto& s : segments) total += s.length;
  return total;
}

LogStore::LogStore(std::string dir, LogLimits limits) : dir_(std::move(dir)), limits_(limits) {}

LogStore::~LogStore() { StopWriter(); }

void LogStore::StartWriter(Post post) {
  COHORT_CHECK(!writer_);
  post_ = std::move(post);
  // A queued append is dropped at a stop: its agent, never answered, sends it again.
  writer_ = std::make_unique<WorkerThread>(WorkerThread::AtStop::kDropQueued);
}

void LogStore::StopWriter() {
  if (!writer_) return;
  writer_.reset();
  post_ = nullptr;
}

void LogStore::WriteQueued(const TaskId& task, int64_t offset, const std::string& data,
                           const LogAppend& options, AppendDone& done) {
  bool changed = false;
  auto size = AppendNow(task, offset, data, options, changed);
  // Subscribers live on the event loop: they are told there, before the answer goes out.
  post_([this, job = task.job, done = std::move(done), size = std::move(size), changed]() mutable {
    if (changed) subscribers_.Notify(job);
    done(std::move(size));
  });
}

void LogStore::AppendAsync(const TaskId& task, int64_t offset, std::string data, LogAppend options,
                           AppendDone done) {
  if (!writer_) return done(Append(task, offset, data, options));
  writer_->Post(
      [this, task, offset, data = std::move(data), options, done = std::move(done)]() mutable {
        WriteQueued(task, offset, data, options, done);
      });
}

std::string LogStore::DirOf(const TaskId& task) const {
  return fmt::format("{}/{}/{}/{}.{}", dir_, task.job, task.attempt, task.role, task.index);
}

std::string LogStore::SegmentPath(const TaskId& task, int64_t start) const {
  return fmt::format("{}/{:0{}}.log", DirOf(task), start, kOffsetDigits);
}

StatusOr<LogStore::TaskLog> LogStore::Index(const TaskId& task) const {
  std::lock_guard lock(mu_);
  COHORT_ASSIGN_OR_RETURN(TaskLog * log, LoadLocked(task));
  return *log;
}

void LogStore::Forget(const TaskId& task) const {
  std::lock_guard lock(mu_);
  cache_.erase(task);
}

StatusOr<LogStore::TaskLog*> LogStore::LoadLocked(const TaskId& task) const {
  if (auto it = cache_.find(task); it != cache_.end()) return &it->second;
  if (cache_.size() >= kMaxCachedLogs) cache_.clear();
  std::string dir = DirOf(task);
  struct stat st {};
  std::string legacy = dir + ".log";
  if (::stat(dir.c_str(), &st) != 0 && errno == ENOENT && ::stat(legacy.c_str(), &st) == 0) {
    // An older master kept the whole log in one file: it becomes the segment at offset 0.
    std::string parent = fs::path(dir).parent_path().string();
    COHORT_RETURN_IF_ERROR(MakeDirectory(parent, fs::path(dir).filename().string()));
    if (::rename(legacy.c_str(), SegmentPath(task, 0).c_str()) != 0) {
      return Status::Internal(fmt::format("moving {} into {}: {}", legacy, dir, Errno()));
    }
    COHORT_RETURN_IF_ERROR(SyncDirectory(dir));
    COHORT_RETURN_IF_ERROR(SyncDirectory(parent));
  }
  TaskLog log;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return Status::Internal(fmt::format("listing {}: {}", dir, ec.message()));
  }
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::string path = it->path().string();
    if (name == "end") {
      std::ifstream in(path);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      auto end = ParseInteger(Trim(text), 0, std::numeric_limits<int64_t>::max());
      if (!end) return Status::Internal(fmt::format("{} does not hold a size", path));
      log.end = *end;
      continue;
    }
    auto start = SegmentStart(name);
    if (!start) continue;
    if (::stat(path.c_str(), &st) != 0) {
      return Status::Internal(fmt::format("reading the size of {}: {}", path, Errno()));
    }
    log.segments.push_back(Segment{*start, static_cast<int64_t>(st.st_size)});
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return Status::Internal(fmt::format("listing {}: {}", dir, ec.message()));
  }
  std::sort(log.segments.begin(), log.segments.end(),
            [](const Segment& a, const Segment& b) { return a.start < b.start; });
  return &cache_.emplace(task, std::move(log)).first->second;
}

StatusOr<int64_t> LogStore::Append(const TaskId& task, int64_t offset, std::string_view data,
                                   const LogAppend& options) {
  bool changed = false;
  auto size = AppendNow(task, offset, data, options, changed);
  if (changed) subscribers_.Notify(task.job);
  return size;
}

StatusOr<int64_t> LogStore::AppendNow(const TaskId& task, int64_t offset, std::string_view data,
                                      const LogAppend& options, bool& changed) {
  COHORT_RETURN_IF_ERROR(CheckTask(task));
  COHORT_RETURN_IF_ERROR(CheckOffset(offset));
  if (options.end && *options.end < 0) {
    return Status::InvalidArgument(fmt::format("end {} is negative", *options.end));
  }
  // The files are written without the lock, from a copy of the index that goes back once they
  // are: readers meanwhile see the log as it was.
  COHORT_ASSIGN_OR_RETURN(TaskLog log, Index(task));
  int64_t size = log.size();
  if (offset > size && !options.skip) {
    return Status::FailedPrecondition(
        fmt::format("log of {} has {} bytes; send from offset {}", task.ToString(), size, size));
  }
  // What fails leaves the files as the truth: the log is read again from them next time.
  auto failed = [&](Status s) {
    Forget(task);
    return s;
  };
  int64_t known = size - offset;  // bytes of `data` already stored or dropped
  if (known < static_cast<int64_t>(data.size())) {
    int64_t from = std::max(offset, size);
    size_t skip = static_cast<size_t>(std::max<int64_t>(known, 0));
    Status written = Write(task, log, from, data.substr(skip));
    if (!written.ok()) return failed(written);
    changed = true;
  }
  if (options.end) {
    int64_t end = std::max(*options.end, log.size());
    if (log.end != end) {
      Status written = WriteEnd(task, log, end);
      if (!written.ok()) return failed(written);
      changed = true;
    }
  }
  std::vector<int64_t> rotated = Rotate(log);
  size = log.size();
  {
    std::lock_guard lock(mu_);
    cache_.insert_or_assign(task, std::move(log));
  }
  // A reader that still holds the old index finds a segment gone and looks again. A crash
  // before the directory reaches the disk may bring a deleted segment back: it is deleted again
  // by the next rotation, so no sync is needed.
  for (int64_t start : rotated) {
    std::string path = SegmentPath(task, start);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return failed(Status::Internal(fmt::format("deleting {}: {}", path, Errno())));
    }
  }
  return size;
}

Status LogStore::Write(const TaskId& task, TaskLog& log, int64_t offset, std::string_view data) {
  std::string dir = DirOf(task);
  if (log.segments.empty()) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) return Status::Internal(fmt::format("creating {}: {}", dir_, ec.message()));
    std::string job_dir = fmt::format("{}/{}", dir_, task.job);
    std::string attempt_dir = fmt::format("{}/{}", job_dir, task.attempt);
    COHORT_RETURN_IF_ERROR(MakeDirectory(dir_, std::to_string(task.job)));
    COHORT_RETURN_IF_ERROR(MakeDirectory(job_dir, std::to_string(task.attempt)));
    COHORT_RETURN_IF_ERROR(MakeDirectory(attempt_dir, fmt::format("{}.{}", task.role, task.index)));
  }
  while (!data.empty()) {
    // A segment is written whole and synced before the next one exists, so that a crash can
    // only lose the tail of the last one, which the agent sends again.
    bool fresh = log.segments.empty() || offset > log.size() ||
                 log.segments.back().length >= limits_.segment;
    if (fresh) log.segments.push_back(Segment{offset, 0});
    Segment& last = log.segments.back();
    std::string path = SegmentPath(task, last.start);
    int flags = O_WRONLY | O_APPEND | O_CLOEXEC | (fresh ? O_CREAT | O_EXCL : 0);
    Fd fd(::open(path.c_str(), flags, 0644));
    if (!fd.ok()) return FileError(errno, fmt::format("opening {}", path));
    // Room is at least a byte: a full segment (or an older master's whole log) got a new one.
    size_t n = static_cast<size_t>(
        std::min<int64_t>(static_cast<int64_t>(data.size()), limits_.segment - last.length));
    COHORT_RETURN_IF_ERROR(WriteAll(fd.get(), data.substr(0, n), path));
    // Acknowledged log lines must survive a crash of the master.
    if (::fdatasync(fd.get()) != 0) return FileError(errno, fmt::format("syncing {}", path));
    if (!fd.Close()) return FileError(errno, fmt::format("closing {}", path));
    if (fresh) COHORT_RETURN_IF_ERROR(SyncDirectory(dir));
    last.length += static_cast<int64_t>(n);
    offset += static_cast<int64_t>(n);
    data.remove_prefix(n);
  }
  return Status::Ok();
}

Status LogStore::WriteEnd(const TaskId& task, TaskLog& log, int64_t end) {
  std::string dir = DirOf(task);
  if (log.segments.empty()) {
    // An end without output: nothing to record, an empty log is complete at 0 anyway.
    if (end == 0) return Status::Ok();
    return Status::FailedPrecondition(
        fmt::format("log of {} has no bytes; send from offset 0", task.ToString()));
  }
  COHORT_RETURN_IF_ERROR(WriteFileAtomically(dir + "/end", fmt::format("{}\n", end)));
  log.end = end;
  return Status::Ok();
}

std::vector<int64_t> LogStore::Rotate(TaskLog& log) const {
  std::vector<int64_t> starts;
  while (log.segments.size() > 1 && log.stored() > limits_.per_task) {
    starts.push_back(log.segments.front().start);
    log.segments.erase(log.segments.begin());
  }
  return starts;
}

StatusOr<int64_t> LogStore::Size(const TaskId& task) const {
  COHORT_ASSIGN_OR_RETURN(LogInfo info, Info(task));
  return info.size;
}

StatusOr<LogInfo> LogStore::Info(const TaskId& task) const {
  COHORT_RETURN_IF_ERROR(CheckTask(task));
  std::lock_guard lock(mu_);
  COHORT_ASSIGN_OR_RETURN(TaskLog * log, LoadLocked(task));
  return LogInfo{log->size(), log->stored(), log->end};
}

StatusOr<LogChunk> LogStore::Read(const TaskId& task, int64_t offset, size_t max_bytes) const {
  COHORT_RETURN_IF_ERROR(CheckTask(task));
  COHORT_RETURN_IF_ERROR(CheckOffset(offset));
  // A segment may be deleted between looking it up and opening it (rotation on the writer
  // thread): then the log is looked up again, and what was in it counts as dropped.
  for (int attempt = 0;; ++attempt) {
    LogChunk chunk;
    chunk.next = offset;
    Segment segment;
    {
      std::lock_guard lock(mu_);
      COHORT_ASSIGN_OR_RETURN(TaskLog * log, LoadLocked(task));
      chunk.size = log->size();
      auto it = std::find_if(log->segments.begin(), log->segments.end(),
                             [&](const Segment& s) { return s.start + s.length > offset; });
      if (it == log->segments.end()) return chunk;
      segment = *it;
    }
    int64_t from = std::max(offset, segment.start);
    chunk.dropped = from - offset;
    chunk.next = from;
    size_t want = static_cast<size_t>(
        std::min<int64_t>(static_cast<int64_t>(max_bytes), segment.start + segment.length - from));
    if (want == 0) return chunk;
    std::string path = SegmentPath(task, segment.start);
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.ok()) {
      if (errno == ENOENT && attempt < 2) {
        if (attempt == 1) Forget(task);  // gone from the disk, not just rotated: start over
        continue;
      }
      return Status::Internal(fmt::format("opening {}: {}", path, Errno()));
    }
    chunk.data.resize(want);
    size_t got = 0;
    while (got < want) {
      ssize_t n = ::pread(fd.get(), chunk.data.data() + got, want - got,
                          static_cast<off_t>(from - segment.start + static_cast<int64_t>(got)));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::Internal(fmt::format("reading {}: {}", path, Errno()));
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    chunk.data.resize(got);
    chunk.next = from + static_cast<int64_t>(got);
    return chunk;
  }
}

StatusOr<std::vector<TaskId>> LogStore::TasksWithLogs(JobId job, int attempt) const {
  std::string dir = fmt::format("{}/{}/{}", dir_, job, attempt);
  std::set<TaskId> tasks;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec == std::errc::no_such_file_or_directory) return std::vector<TaskId>();
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    // role.index (a log in segments), or role.index.log (an older master's log).
    auto parts = Split(it->path().filename().string(), '.');
    std::error_code type_ec;
    bool segmented = parts.size() == 2 && it->is_directory(type_ec);
    bool legacy = parts.size() == 3 && parts[2] == "log";
    if (!(segmented || legacy) || !IsValidRole(parts[0])) continue;
    auto index = ParseInteger(parts[1], 0, std::numeric_limits<int>::max());
    if (!index) continue;
    tasks.insert(TaskId{job, attempt, parts[0], static_cast<int>(*index)});
  }
  if (ec) return Status::Internal(fmt::format("listing {}: {}", dir, ec.message()));
  return std::vector<TaskId>(tasks.begin(), tasks.end());
}

LogStore::SubscriptionId LogStore::Subscribe(JobId job, std::function<void()> callback) {
  return subscribers_.Subscribe(job, std::move(callback));
}

void LogStore::Unsubscribe(SubscriptionId id) { subscribers_.Unsubscribe(id); }

}  // namespace cohort::master
