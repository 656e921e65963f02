#include "store/directory_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <random>
#include <system_error>
#include <vector>

#include "os/durable_file.h"

namespace cohort::store {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kDirectoryMark = "%2F";
constexpr std::chrono::hours kStaleTemporary{1};

std::string Encode(std::string_view segment) {
  std::string out;
  for (char c : segment) {
    if (c == '%') {
      out += "%25";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Decode(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name.substr(i, 3) == "%25") {
      out += '%';
      i += 2;
    } else {
      out += name[i];
    }
  }
  return out;
}

std::vector<std::string> Segments(std::string_view key) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = key.find('/', start);
    out.emplace_back(key.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

Status ErrnoStatus(std::string_view doing) { return FileError(errno, doing); }

class DirectoryStore final : public ObjectStore {
 public:
  explicit DirectoryStore(std::string root) : root_(std::move(root)) {}

  Status Put(const std::string& key, std::string_view data) override {
    return PutFrom(key, [&](int fd, const std::string& tmp) { return WriteAll(fd, data, tmp); });
  }

  Status PutFile(const std::string& key, const std::string& path) override {
    return PutFrom(key, [&](int fd, const std::string& tmp) -> Status {
      int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (in < 0) return ErrnoStatus(fmt::format("opening {}", path));
      std::string buffer(1 << 20, '\0');
      Status s;
      while (s.ok()) {
        ssize_t n = ::read(in, buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          s = ErrnoStatus(fmt::format("reading {}", path));
          break;
        }
        if (n == 0) break;
        s = WriteAll(fd, std::string_view(buffer.data(), static_cast<size_t>(n)), tmp);
      }
      ::close(in);
      return s;
    });
  }

  StatusOr<std::string> Get(const std::string& key, size_t max_bytes) override {
    COHORT_ASSIGN_OR_RETURN(ObjectInfo info, Head(key));
    if (static_cast<uint64_t>(info.size) > max_bytes) {
      return Status::ResourceExhausted(fmt::format(
          "object {} is {} bytes, more than the {} this reader takes", key, info.size, max_bytes));
    }
    std::ifstream in(PathOf(key), std::ios::binary);
    std::string data(static_cast<size_t>(info.size), '\0');
    in.read(data.data(), static_cast<std::streamsize>(data.size()));
    if (!in) return Status::Internal(fmt::format("reading object {} failed", key));
    return data;
  }

  StatusOr<std::string> GetRange(const std::string& key, int64_t offset, size_t length) override {
    COHORT_RETURN_IF_ERROR(CheckRangeStart(offset));
    COHORT_RETURN_IF_ERROR(CheckKey(key));
    int fd = ::open(PathOf(key).c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd >= 0 && (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
      ::close(fd);
      fd = -1;
    }
    if (fd < 0) return Status::NotFound(fmt::format("no object {}", key));
    // Only what the file holds: a length of "the rest" must not allocate that much.
    const int64_t left = std::max<int64_t>(0, st.st_size - offset);
    std::string data(static_cast<size_t>(std::min<uint64_t>(length, left)), '\0');
    size_t got = 0;
    Status status;
    while (got < data.size()) {
      ssize_t n =
          ::pread(fd, data.data() + got, data.size() - got, offset + static_cast<int64_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        status = ErrnoStatus(fmt::format("reading object {}", key));
        break;
      }
      if (n == 0) break;  // never for a stored object (a put renames a new file in)
      got += static_cast<size_t>(n);
    }
    ::close(fd);
    if (!status.ok()) return status;
    data.resize(got);
    return data;
  }

  Status GetFile(const std::string& key, const std::string& path) override {
    COHORT_RETURN_IF_ERROR(CheckKey(key));
    std::error_code ec;
    if (!fs::is_regular_file(PathOf(key), ec)) {
      return Status::NotFound(fmt::format("no object {}", key));
    }
    const std::string tmp = path + ".part";
    fs::copy_file(PathOf(key), tmp, fs::copy_options::overwrite_existing, ec);
    if (ec)
      return Status::Internal(fmt::format("copying object {} to {}: {}", key, tmp, ec.message()));
    fs::rename(tmp, path, ec);
    if (ec) {
      fs::remove(tmp, ec);
      return Status::Internal(fmt::format("renaming {} to {} failed", tmp, path));
    }
    return Status::Ok();
  }

  StatusOr<ObjectInfo> Head(const std::string& key) override {
    COHORT_RETURN_IF_ERROR(CheckKey(key));
    struct stat st {};
    if (::stat(PathOf(key).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return Status::NotFound(fmt::format("no object {}", key));
    }
    return ObjectInfo{key, static_cast<int64_t>(st.st_size)};
  }

  StatusOr<ListPage> List(const std::string& prefix, const std::string& after,
                          size_t limit) override {
    if (limit == 0) return Status::InvalidArgument("limit: must be at least 1");
    // Walk only the directory the prefix's whole segments name.
    std::string base_key;
    if (size_t slash = prefix.rfind('/'); slash != std::string::npos) {
      base_key = prefix.substr(0, slash);
      COHORT_RETURN_IF_ERROR(CheckKey(base_key));
    }
    std::string dir = root_ + "/objects";
    if (!base_key.empty()) {
      for (const auto& s : Segments(base_key)) dir += "/" + Encode(s) + std::string(kDirectoryMark);
    }
    std::vector<ObjectInfo> found;
    std::error_code ec;
    if (fs::is_directory(dir, ec)) Walk(dir, base_key, prefix, after, found);
    std::sort(found.begin(), found.end(),
              [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
    ListPage page;
    page.more = found.size() > limit;
    if (page.more) found.resize(limit);
    page.objects = std::move(found);
    return page;
  }

  Status Delete(const std::string& key) override {
    COHORT_RETURN_IF_ERROR(CheckKey(key));
    const std::string path = PathOf(key);
    if (::unlink(path.c_str()) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) return Status::Ok();
      return ErrnoStatus(fmt::format("deleting object {}", key));
    }
    return SyncDirectory(fs::path(path).parent_path().string());
  }

 private:
  std::string PathOf(const std::string& key) const {
    std::vector<std::string> segments = Segments(key);
    std::string path = root_ + "/objects";
    for (size_t i = 0; i + 1 < segments.size(); ++i) {
      path += "/" + Encode(segments[i]) + std::string(kDirectoryMark);
    }
    return path + "/" + Encode(segments.back());
  }

  // Writes a temporary file with `fill`, syncs it and renames it into place: whole or nothing.
  template <typename Fill>
  Status PutFrom(const std::string& key, Fill fill) {
    COHORT_RETURN_IF_ERROR(CheckKey(key));
    const std::string path = PathOf(key);
    // Unique across the processes, and the machines, that share the store: the master reads
    // while several agents write.
    const std::string tmp = fmt::format("{}/tmp/{}.{}.{:016x}", root_, ::getpid(), next_++, salt_);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return ErrnoStatus(fmt::format("creating {}", tmp));
    Status s = fill(fd, tmp);
    if (s.ok() && ::fsync(fd) != 0) s = ErrnoStatus(fmt::format("syncing {}", tmp));
    if (::close(fd) != 0 && s.ok()) s = ErrnoStatus(fmt::format("closing {}", tmp));
    const std::string parent = fs::path(path).parent_path().string();
    std::error_code ec;
    if (s.ok()) {
      fs::create_directories(parent, ec);
      if (ec) s = Status::Internal(fmt::format("making {}: {}", parent, ec.message()));
    }
    if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
      s = ErrnoStatus(fmt::format("storing object {}", key));
    }
    if (!s.ok()) {
      ::unlink(tmp.c_str());
      return s;
    }
    return SyncDirectory(parent);
  }

  void Walk(const std::string& dir, const std::string& dir_key, const std::string& prefix,
            const std::string& after, std::vector<ObjectInfo>& found) const {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      std::string name = entry.path().filename().string();
      bool is_dir = name.size() > kDirectoryMark.size() &&
                    name.compare(name.size() - kDirectoryMark.size(), kDirectoryMark.size(),
                                 kDirectoryMark) == 0;
      std::string segment =
          Decode(is_dir ? std::string_view(name).substr(0, name.size() - kDirectoryMark.size())
                        : std::string_view(name));
      std::string key = dir_key.empty() ? segment : dir_key + "/" + segment;
      if (is_dir) {
        // Only directories whose keys can still start with the prefix.
        std::string as_prefix = key + "/";
        if (as_prefix.compare(0, std::min(as_prefix.size(), prefix.size()), prefix, 0,
                              std::min(as_prefix.size(), prefix.size())) == 0) {
          Walk(entry.path().string(), key, prefix, after, found);
        }
        continue;
      }
      if (key.compare(0, prefix.size(), prefix) != 0 || key <= after) continue;
      std::error_code size_ec;
      auto size = entry.file_size(size_ec);
      if (!size_ec) found.push_back(ObjectInfo{key, static_cast<int64_t>(size)});
    }
  }

  std::string root_;
  std::atomic<uint64_t> next_{0};
  const uint64_t salt_ = std::random_device{}() * (uint64_t{1} << 32) ^ std::random_device{}();
};

}  // namespace

StatusOr<std::unique_ptr<ObjectStore>> OpenDirectoryStore(const std::string& root) {
  std::error_code ec;
  for (const char* sub : {"objects", "tmp"}) {
    fs::create_directories(fs::path(root) / sub, ec);
    if (ec) return Status::Internal(fmt::format("making {}/{}: {}", root, sub, ec.message()));
  }
  fs::permissions(root, fs::perms::owner_all, ec);
  // Puts cut short by a crash. Not one under way in another process: its file is written to
  // as it goes, so it is never this old.
  const auto stale = fs::file_time_type::clock::now() - kStaleTemporary;
  for (const auto& entry : fs::directory_iterator(fs::path(root) / "tmp", ec)) {
    std::error_code time_ec;
    auto written = entry.last_write_time(time_ec);
    if (!time_ec && written < stale) fs::remove(entry.path(), ec);
  }
  return std::unique_ptr<ObjectStore>(new DirectoryStore(root));
}

}  // namespace cohort::store
