#include "metrics/event_file_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "metrics/event_decoder.h"
#include "metrics/tfrecord_reader.h"

namespace cohort::metrics {
namespace {

// Bytes read at a time, unless a record needs more: keeps the buffer small for a file that
// has a lot to catch up on.
constexpr uint64_t kChunkBytes = 1 << 20;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Reads up to `n` bytes at `offset`; fewer only at the end of the file. -1 on error (errno).
ssize_t ReadAt(int fd, char* out, size_t n, uint64_t offset) {
  size_t done = 0;
  while (done < n) {
    ssize_t got = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return static_cast<ssize_t>(done);
}

}  // namespace

EventFileReader::EventFileReader(std::filesystem::path path, std::string name, std::string run)
    : path_(std::move(path)), name_(std::move(name)), run_(std::move(run)) {}

void EventFileReader::StartOver(Read& read, uint64_t at, std::string why) {
  read.batch.problems.push_back(
      ReadProblem{name_, at, std::move(why) + "; reading it again from the start"});
  offset_ = 0;
  needed_ = 0;
  stuck_at_.reset();
}

EventFileReader::Read EventFileReader::ReadNew(uint64_t max_bytes) {
  Read read;
  auto error_once = [&](std::string what) {
    if (what == last_error_) return;
    last_error_ = what;
    read.batch.problems.push_back(ReadProblem{name_, offset_, std::move(what)});
  };
  // O_NONBLOCK: were the name a FIFO now, opening it must not wait for a writer.
  Fd fd(::open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    if (errno != ENOENT) error_once(fmt::format("cannot open: {}", std::strerror(errno)));
    return read;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    error_once("not a regular file");
    return read;
  }
  last_error_.clear();
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  std::pair<dev_t, ino_t> identity{st.st_dev, st.st_ino};
  if (identity_ && *identity_ != identity) {
    StartOver(read, 0, "file was replaced by another");
  } else if (size < size_seen_) {
    StartOver(read, size, fmt::format("file shrank from {} to {} bytes", size_seen_, size));
  }
  identity_ = identity;
  size_seen_ = size;
  if (stuck_at_ && size == stuck_size_) return read;

  std::string buffer;
  while (offset_ < size && read.bytes_read < max_bytes) {
    uint64_t budget = std::min(max_bytes - read.bytes_read, kChunkBytes);
    uint64_t want = std::min(size - offset_, std::max(budget, needed_));
    buffer.resize(want);
    ssize_t got = ReadAt(fd.get(), buffer.data(), want, offset_);
    if (got < 0) {
      error_once(fmt::format("cannot read: {}", std::strerror(errno)));
      break;
    }
    if (got == 0) break;
    read.bytes_read += static_cast<uint64_t>(got);
    const uint64_t scanned_from = offset_;
    TfRecordScan scan =
        ScanTfRecords(std::string_view(buffer.data(), static_cast<size_t>(got)), offset_, name_);
    for (const TfRecord& record : scan.records) {
      auto points = DecodeEventScalars(record.data, run_);
      if (!points.ok()) {
        read.batch.problems.push_back(
            ReadProblem{name_, record.offset, points.status().message() + "; record skipped"});
        continue;
      }
      read.batch.points.insert(read.batch.points.end(), std::make_move_iterator(points->begin()),
                               std::make_move_iterator(points->end()));
    }
    offset_ = scan.next_offset;
    if (scan.stop == ScanStop::kBadLength) {
      // Reported once per place: trying the same spot again after the file grew says nothing new.
      if (stuck_at_ != offset_) {
        read.batch.problems.insert(read.batch.problems.end(), scan.problems.begin(),
                                   scan.problems.end());
      } else {
        read.batch.problems.insert(read.batch.problems.end(), scan.problems.begin(),
                                   scan.problems.end() - 1);
      }
      stuck_at_ = offset_;
      stuck_size_ = size;
      return read;
    }
    stuck_at_.reset();
    read.batch.problems.insert(read.batch.problems.end(), scan.problems.begin(),
                               scan.problems.end());
    needed_ = scan.stop == ScanStop::kIncomplete ? scan.bytes_needed : 0;
    if (scan.stop == ScanStop::kIncomplete &&
        (offset_ + needed_ > size || (offset_ == scanned_from && needed_ <= want))) {
      break;  // the writer is in the middle of this record
    }
  }
  read.more = offset_ < size && read.bytes_read >= max_bytes;
  return read;
}

}  // namespace cohort::metrics
