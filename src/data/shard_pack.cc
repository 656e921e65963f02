#include "data/shard_pack.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <locale.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "os/durable_file.h"
#include "store/content_hash.h"
#include "store/file_tree.h"

namespace cohort::data {

namespace fs = std::filesystem;

namespace {

std::string ShardName(size_t i) { return fmt::format("shard-{:06}.tar", i); }
std::string MemberTableName(size_t i) { return fmt::format("shard-{:06}.idx", i); }
std::string TemporaryName(const std::string& name) { return "." + name + ".tmp"; }

// One shard file being written: libarchive's output goes to the file and through SHA-256.
class ShardSink {
 public:
  ShardSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

  static la_ssize_t Write(struct archive*, void* self, const void* data, size_t n) {
    auto* sink = static_cast<ShardSink*>(self);
    if (!sink->status_.ok()) return -1;
    std::string_view bytes(static_cast<const char*>(data), n);
    sink->status_ = WriteAll(sink->fd_, bytes, sink->path_);
    if (sink->status_.ok()) sink->status_ = sink->hash_.Update(bytes);
    if (!sink->status_.ok()) return -1;
    sink->bytes_ += int64_t(n);
    return la_ssize_t(n);
  }

  const Status& status() const { return status_; }
  int64_t bytes() const { return bytes_; }
  StatusOr<std::string> Digest() { return hash_.Finish(); }

 private:
  int fd_;
  std::string path_;
  store::Sha256 hash_;
  Status status_;
  int64_t bytes_ = 0;
};

// libarchive writes a name in the pax header as UTF-8 after converting it from the locale's
// charset: in the C locale, which programs start in, a non-ASCII name fails. Member names are
// UTF-8 (store::CheckKey), so the writing thread uses C.UTF-8 while it writes, whatever the
// process's locale: the same input gives the same bytes everywhere.
class Utf8Locale {
 public:
  Utf8Locale() : utf8_(::newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t(0))) {
    if (utf8_ != locale_t(0)) previous_ = ::uselocale(utf8_);
  }
  ~Utf8Locale() {
    if (utf8_ == locale_t(0)) return;
    ::uselocale(previous_);
    ::freelocale(utf8_);
  }
  Status status() const {
    return utf8_ != locale_t(0)
               ? Status::Ok()
               : Status::FailedPrecondition("the C.UTF-8 locale is missing (Debian's libc-bin)");
  }

 private:
  locale_t utf8_;
  locale_t previous_ = locale_t(0);
};

struct ArchiveFree {
  void operator()(struct archive* a) const { archive_write_free(a); }
};
struct EntryFree {
  void operator()(struct archive_entry* e) const { archive_entry_free(e); }
};

// The error of a libarchive call: the sink's own (a full disk) when it has one.
Status ArchiveError(struct archive* a, const ShardSink& sink, std::string_view doing) {
  if (!sink.status().ok()) return sink.status();
  const char* what = archive_error_string(a);
  return Status::Internal(fmt::format("{}: {}", doing, what ? what : "libarchive failed"));
}

// Copies one file into the archive, named by its relative path, checking that it is still the
// regular file of the size that the plan saw; where its data lies in the shard.
StatusOr<MemberSpan> AddFile(struct archive* a, const ShardSink& sink, const fs::path& source,
                             const InputFile& file, const std::function<void(int64_t)>& on_bytes) {
  fs::path path = source / file.path;
  // Opened a component at a time: a directory swapped for a link since the listing is refused.
  COHORT_ASSIGN_OR_RETURN(store::OpenFile opened, store::OpenBeneath(source.string(), file.path));
  int fd = opened.fd();
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return Status::Internal(
        fmt::format("cannot stat {}: {}", ShownPath(path.string()), std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode) || st.st_size != file.size) {
    return Status::FailedPrecondition(
        fmt::format("{}: changed while being packed (was a file of {} bytes)",
                    ShownPath(path.string()), file.size));
  }
  std::unique_ptr<struct archive_entry, EntryFree> entry(archive_entry_new());
  archive_entry_copy_pathname(entry.get(), file.path.c_str());
  archive_entry_set_filetype(entry.get(), AE_IFREG);
  archive_entry_set_perm(entry.get(), 0644);
  archive_entry_set_size(entry.get(), file.size);
  archive_entry_set_mtime(entry.get(), 0, 0);
  archive_entry_set_uid(entry.get(), 0);
  archive_entry_set_gid(entry.get(), 0);
  if (archive_write_header(a, entry.get()) != ARCHIVE_OK) {
    return ArchiveError(a, sink, fmt::format("writing the header of {}", ShownPath(file.path)));
  }
  // What the format has written so far, buffered or not: the header just written ends there, so
  // the data begins there.
  const int64_t offset = archive_filter_bytes(a, 0);
  if (offset < 512 || offset % 512 != 0) {
    return Status::Internal(
        fmt::format("{}: libarchive put its data at offset {}, not after a "
                    "whole header",
                    ShownPath(file.path), offset));
  }
  std::array<char, 1 << 16> buffer{};
  int64_t copied = 0;
  while (true) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Status::Internal(
          fmt::format("cannot read {}: {}", ShownPath(path.string()), std::strerror(errno)));
    }
    if (n == 0) break;
    if (copied + n > file.size) break;  // grew: caught below
    if (archive_write_data(a, buffer.data(), size_t(n)) != n) {
      return ArchiveError(a, sink, fmt::format("writing {}", ShownPath(file.path)));
    }
    copied += n;
    on_bytes(n);
  }
  if (copied != file.size) {
    return Status::FailedPrecondition(
        fmt::format("{}: changed while being packed (was a file of {} bytes)",
                    ShownPath(path.string()), file.size));
  }
  if (archive_write_finish_entry(a) != ARCHIVE_OK) {
    return ArchiveError(a, sink, fmt::format("writing {}", ShownPath(file.path)));
  }
  return MemberSpan{file.path, offset, file.size};
}

// Writes `content` to a new file at `path`, fsynced.
Status WriteNewFile(const std::string& path, std::string_view content) {
  store::OpenFile file(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (file.fd() < 0) return FileError(errno, fmt::format("creating {}", path));
  COHORT_RETURN_IF_ERROR(WriteAll(file.fd(), content, path));
  if (::fsync(file.fd()) != 0) return FileError(errno, fmt::format("syncing {}", path));
  return Status::Ok();
}

// Writes one planned shard to `tmp_path`, fsynced, and where each member's data lies in it to
// `members`.
StatusOr<PackedShard> WriteShard(const fs::path& source, const ShardPlanEntry& planned,
                                 const std::string& tmp_path, std::vector<MemberSpan>& members,
                                 const std::function<void(int64_t)>& on_bytes,
                                 const std::function<void()>& on_file) {
  store::OpenFile file(::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (file.fd() < 0) return FileError(errno, fmt::format("creating {}", tmp_path));
  const int fd = file.fd();
  Utf8Locale locale;
  COHORT_RETURN_IF_ERROR(locale.status());
  ShardSink sink(fd, tmp_path);
  COHORT_RETURN_IF_ERROR(sink.status());
  std::unique_ptr<struct archive, ArchiveFree> a(archive_write_new());
  // pax only where ustar cannot say it (a long or non-ASCII name, a size past 8 GiB): plain
  // ustar headers otherwise, which every tar reader takes.
  // No padding to tar's 10 KiB records: a shard is its members and the end, as planned.
  if (archive_write_set_format_pax_restricted(a.get()) != ARCHIVE_OK ||
      archive_write_set_bytes_in_last_block(a.get(), 1) != ARCHIVE_OK ||
      archive_write_open(a.get(), &sink, nullptr, &ShardSink::Write, nullptr) != ARCHIVE_OK) {
    return ArchiveError(a.get(), sink, fmt::format("starting {}", tmp_path));
  }
  members.clear();
  members.reserve(planned.files.size());
  for (const InputFile& file : planned.files) {
    COHORT_ASSIGN_OR_RETURN(MemberSpan member, AddFile(a.get(), sink, source, file, on_bytes));
    members.push_back(std::move(member));
    on_file();
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK) {
    return ArchiveError(a.get(), sink, fmt::format("ending {}", tmp_path));
  }
  if (::fsync(fd) != 0) return FileError(errno, fmt::format("syncing {}", tmp_path));
  PackedShard shard;
  shard.bytes = sink.bytes();
  COHORT_ASSIGN_OR_RETURN(shard.sha256, sink.Digest());
  shard.samples = planned.samples;
  shard.files = int64_t(planned.files.size());
  shard.first_key = planned.first_key;
  shard.last_key = planned.last_key;
  return shard;
}

// `inner` is `outer` or lies under it.
bool IsWithin(const fs::path& inner, const fs::path& outer) {
  auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return o == outer.end();
}

}  // namespace

std::string ShardIndexJson(const ShardIndex& index) {
  nlohmann::ordered_json shards = nlohmann::ordered_json::array();
  for (const PackedShard& s : index.shards) {
    shards.push_back(
        {{"name", s.name},
         {"bytes", s.bytes},
         {"sha256", s.sha256},
         {"samples", s.samples},
         {"files", s.files},
         {"first_key", s.first_key},
         {"last_key", s.last_key},
         {"members",
          {{"name", s.members.name}, {"bytes", s.members.bytes}, {"sha256", s.members.sha256}}}});
  }
  nlohmann::ordered_json j = {
      {"format", "cohort-shards"}, {"version", index.version}, {"target_bytes", index.target_bytes},
      {"files", index.files},      {"samples", index.samples}, {"input_bytes", index.input_bytes},
      {"bytes", index.bytes},      {"shards", shards}};
  return j.dump(1) + "\n";
}

std::string MemberTableJson(const std::string& shard_name, const std::vector<MemberSpan>& members) {
  nlohmann::ordered_json names = nlohmann::ordered_json::array();
  nlohmann::ordered_json offsets = nlohmann::ordered_json::array();
  nlohmann::ordered_json sizes = nlohmann::ordered_json::array();
  for (const MemberSpan& m : members) {
    names.push_back(m.name);
    offsets.push_back(m.offset);
    sizes.push_back(m.size);
  }
  nlohmann::ordered_json j = {{"format", kMemberTableFormat},  {"version", kMemberTableVersion},
                              {"shard", shard_name},           {"names", std::move(names)},
                              {"offsets", std::move(offsets)}, {"sizes", std::move(sizes)}};
  return j.dump() + "\n";
}

StatusOr<std::vector<InputFile>> ListSourceFiles(const std::string& source_dir, int64_t max_files) {
  // The store's own walk: what `cohort data put` would store, found without following a link.
  auto tree = store::ListTree(source_dir, size_t(max_files));
  if (!tree.ok() && tree.status().code() == StatusCode::kResourceExhausted) {
    return Status::InvalidArgument(
        fmt::format("{}: holds more than {} files; pack it in parts", source_dir, max_files));
  }
  if (!tree.ok() && tree.status().code() == StatusCode::kNotFound) {
    return Status::InvalidArgument(fmt::format("{}: not a directory", source_dir));
  }
  if (!tree.ok()) return tree.status();
  // What the store's walk leaves out, packing refuses: a dataset packed without some of its
  // files would not be the one its owner gave.
  if (tree->skipped_count > 0) {
    std::vector<std::string> named;
    for (const std::string& s : tree->skipped) named.push_back(ShownPath(s));
    std::string more = tree->skipped_count > 1
                           ? fmt::format(" (and {} more)", tree->skipped_count - 1)
                           : std::string();
    std::string message = fmt::format(
        "{}{}: shards hold regular files with names that can be store keys; copy a "
        "link's target in its place, rename or remove the rest",
        named.front(), more);
    return Status::InvalidArgument(std::move(message), std::move(named));
  }
  if (tree->files.empty()) {
    return Status::InvalidArgument(fmt::format("{}: holds no file to pack", source_dir));
  }
  std::vector<InputFile> files;
  files.reserve(tree->files.size());
  for (store::TreeFile& f : tree->files) files.push_back({std::move(f.path), f.size});
  return files;
}

StatusOr<ShardIndex> PackDirectory(const std::string& source_dir, const std::string& out_dir,
                                   int64_t target_bytes,
                                   const std::function<void(const PackProgress&)>& progress) {
  std::error_code ec;
  fs::path source = fs::canonical(source_dir, ec);
  if (ec || !fs::is_directory(source)) {
    return Status::InvalidArgument(fmt::format("{}: not a directory", source_dir));
  }
  fs::path out = fs::weakly_canonical(out_dir, ec);
  if (ec) return Status::InvalidArgument(fmt::format("{}: {}", out_dir, ec.message()));
  if (IsWithin(out, source)) {
    return Status::InvalidArgument(
        fmt::format("{}: lies inside {}, which is being packed; put the shards elsewhere", out_dir,
                    source_dir));
  }
  COHORT_ASSIGN_OR_RETURN(std::vector<InputFile> files, ListSourceFiles(source.string()));
  COHORT_ASSIGN_OR_RETURN(ShardPlan plan, PlanShards(std::move(files), target_bytes));

  fs::create_directories(out, ec);
  if (ec)
    return Status::FailedPrecondition(fmt::format("cannot make {}: {}", out_dir, ec.message()));
  if (!fs::is_empty(out, ec) || ec) {
    return Status::FailedPrecondition(
        fmt::format("{}: not empty; shards go into an empty or new directory", out_dir));
  }

  PackProgress at;
  at.files_total = plan.files;
  at.bytes_total = plan.input_bytes;
  at.shards_total = int64_t(plan.shards.size());
  auto report = [&] {
    if (progress) progress(at);
  };
  report();

  // Whatever this packing wrote goes if it fails: no index, so nothing is taken for packed.
  std::vector<fs::path> written;
  struct Cleanup {
    std::vector<fs::path>* written;
    bool done = false;
    ~Cleanup() {
      if (done) return;
      std::error_code ignored;
      for (const fs::path& p : *written) fs::remove(p, ignored);
    }
  } cleanup{&written};

  ShardIndex index;
  index.target_bytes = target_bytes;
  index.files = plan.files;
  index.samples = plan.samples;
  index.input_bytes = plan.input_bytes;
  // Each shard and its table: written under temporary names, renamed once all are whole.
  std::vector<std::string> names;
  std::vector<MemberSpan> members;
  for (size_t i = 0; i < plan.shards.size(); ++i) {
    fs::path tmp = out / TemporaryName(ShardName(i));
    written.push_back(tmp);
    names.push_back(ShardName(i));
    COHORT_ASSIGN_OR_RETURN(PackedShard shard, WriteShard(
                                                   source, plan.shards[i], tmp.string(), members,
                                                   [&](int64_t n) { at.bytes_done += n; },
                                                   [&] {
                                                     at.files_done += 1;
                                                     report();
                                                   }));
    shard.name = ShardName(i);
    std::string table = MemberTableJson(shard.name, members);
    fs::path table_tmp = out / TemporaryName(MemberTableName(i));
    written.push_back(table_tmp);
    names.push_back(MemberTableName(i));
    COHORT_RETURN_IF_ERROR(WriteNewFile(table_tmp.string(), table));
    shard.members.name = MemberTableName(i);
    shard.members.bytes = int64_t(table.size());
    COHORT_ASSIGN_OR_RETURN(shard.members.sha256, store::Sha256Hex(table));
    index.bytes += shard.bytes;
    index.shards.push_back(std::move(shard));
    at.shards_done += 1;
    report();
  }
  for (size_t i = 0; i < names.size(); ++i) {
    fs::path final_path = out / names[i];
    if (::rename(written[i].c_str(), final_path.c_str()) != 0) {
      return FileError(errno, fmt::format("renaming {}", final_path.string()));
    }
    written[i] = final_path;
  }
  COHORT_RETURN_IF_ERROR(SyncDirectory(out.string()));
  COHORT_RETURN_IF_ERROR(
      WriteFileAtomically((out / kShardIndexFile).string(), ShardIndexJson(index)));
  cleanup.done = true;
  return index;
}

}  // namespace cohort::data
