// cohort artifacts ls / get: a job's outputs in the object store, as its agent uploaded them once
// its first task ended (docs/cli.md, "Outputs"; the API's /jobs/{id}/artifacts routes).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/transfer_progress.h"
#include "common/strings.h"
#include "common/units.h"
#include "model/json.h"
#include "os/durable_file.h"

namespace cohort::cli {

std::string ArtifactStateText(const std::optional<UploadProgress>& p) {
  if (!p) return "none yet";
  switch (p->state) {
    case UploadState::kWaiting:
      return fmt::format("waiting to upload ({} file{}, {})", p->files_total,
                         p->files_total == 1 ? "" : "s", FormatByteSizeApprox(p->bytes_total));
    case UploadState::kUploading: {
      std::string line =
          fmt::format("uploading ({} of {} files, {} of {})", p->files_done, p->files_total,
                      FormatByteSizeApprox(p->bytes_done), FormatByteSizeApprox(p->bytes_total));
      if (!p->reason.empty()) line += "; retrying: " + p->reason;
      return line;
    }
    case UploadState::kStored: {
      std::string line =
          fmt::format("stored: {} file{}, {}", p->files_total, p->files_total == 1 ? "" : "s",
                      FormatByteSizeApprox(p->bytes_total));
      if (p->files_skipped > 0) {
        line += fmt::format(" ({} left out: links or special files)", p->files_skipped);
      }
      return line;
    }
    case UploadState::kFailed:
      return "failed: " + p->reason;
  }
  return "?";
}

namespace {

// What one answer of the master holds of an output: larger ones come in ranges of this.
constexpr int64_t kArtifactRange = int64_t{8} << 20;
constexpr size_t kArtifactPage = 1000;

struct ArtifactOptions {
  std::string job;
  std::string path;
  std::string dir;
  std::string output = "table";
  bool json = false;
};

struct Output {
  std::string path;
  int64_t size = 0;
};

// Every output of the job (page after page), and its upload's state.
StatusOr<std::vector<Output>> ListOutputs(client::CohortClient& c, JobId id,
                                          std::optional<UploadProgress>* state) {
  std::vector<Output> outputs;
  std::string after;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(Json page, c.Artifacts(id, after, kArtifactPage));
    if (state && outputs.empty() && page["artifacts"].is_object()) {
      auto progress = UploadProgressFromJson(page["artifacts"]);
      if (progress.ok()) *state = std::move(*progress);
    }
    for (const auto& f : page["files"]) {
      outputs.push_back(Output{f["path"].get<std::string>(), f["size"].get<int64_t>()});
    }
    if (!page["more"].get<bool>() || page["files"].empty()) return outputs;
    after = outputs.back().path;
  }
}

StatusOr<JobId> JobArg(client::CohortClient& c, const std::string& text) {
  if (text.find('_') != std::string::npos) return ResolveJob(c, text);  // ARRAY_INDEX
  auto id = ParseJobId(text);
  if (!id.ok()) {
    return Status::InvalidArgument(fmt::format(
        "JOB: \"{}\" is not a job id (a positive integer, as `cohort list` shows)", text));
  }
  return *id;
}

int RunList(const GlobalOptions& g, const ArtifactOptions& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("artifacts ls", c.status());
  auto id = JobArg(**c, o.job);
  if (!id.ok()) return Fail("artifacts ls", id.status());
  std::optional<UploadProgress> state;
  auto outputs = ListOutputs(**c, *id, &state);
  if (!outputs.ok()) return Fail("artifacts ls", outputs.status());
  if (o.output == "json") {
    Json files = Json::array();
    for (const auto& f : *outputs) files.push_back(Json{{"path", f.path}, {"size", f.size}});
    fmt::print(
        "{}\n",
        Json{{"job", *id}, {"artifacts", state ? ToJson(*state) : Json(nullptr)}, {"files", files}}
            .dump(2));
    return 0;
  }
  fmt::print("Artifacts: {}\n", ArtifactStateText(state));
  if (outputs->empty()) return 0;
  Table table({"PATH", "SIZE"});
  for (const auto& f : *outputs) table.Add({f.path, FormatByteSizeApprox(f.size)});
  table.Print(stdout);
  return 0;
}

// A path the master gave that names a file below the download directory: relative, '/'-separated
// segments, none empty, "." or "..", no NUL. Checked here whatever the master says.
Status CheckLocalPath(const std::string& path) {
  auto refuse = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format(
        "the master named an output \"{}\", which {}: not written", path.substr(0, 200), why));
  };
  if (path.empty()) return refuse("is empty");
  if (path.front() == '/') return refuse("is absolute");
  if (path.find('\0') != std::string::npos) return refuse("holds a NUL byte");
  for (const auto& segment : Split(path, '/')) {
    if (segment.empty() || segment == "." || segment == "..") {
      return refuse("has an empty, \".\" or \"..\" segment");
    }
  }
  return Status::Ok();
}

// The directory `parent` of `dir` opened without following a symbolic link anywhere below `dir`
// (made as needed): a link placed there cannot take a download elsewhere.
StatusOr<int> OpenBelow(const std::string& dir, const std::vector<std::string>& parents) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return FileError(errno, fmt::format("opening {}", dir));
  std::string where = dir;
  for (const auto& segment : parents) {
    where += "/" + segment;
    if (::mkdirat(fd, segment.c_str(), 0755) != 0 && errno != EEXIST) {
      int err = errno;
      ::close(fd);
      return FileError(err, fmt::format("making {}", where));
    }
    int next = ::openat(fd, segment.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    ::close(fd);
    if (next < 0) {
      return err == ELOOP || err == ENOTDIR
                 ? Status::FailedPrecondition(fmt::format(
                       "{} is a symbolic link or not a directory: not written through", where))
                 : FileError(err, fmt::format("opening {}", where));
    }
    fd = next;
  }
  return fd;
}

// One output into `dir`/its path: range after range into a temporary file beside it, renamed
// over the path once whole.
Status Download(client::CohortClient& c, JobId id, const Output& out, const std::string& dir,
                Totals& totals, Progress& progress) {
  COHORT_RETURN_IF_ERROR(CheckLocalPath(out.path));
  std::vector<std::string> parents = Split(out.path, '/');
  const std::string name = parents.back();
  parents.pop_back();
  COHORT_ASSIGN_OR_RETURN(int dir_fd, OpenBelow(dir, parents));
  const std::string part = fmt::format(".{}.cohort-part", name);
  int fd =
      ::openat(dir_fd, part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    int err = errno;
    ::close(dir_fd);
    return FileError(err, fmt::format("creating {}/{}", dir, out.path + ".cohort-part"));
  }
  Status status;
  int64_t offset = 0;
  while (status.ok() && offset < out.size) {
    auto bytes = c.ArtifactRange(id, out.path, offset, kArtifactRange);
    if (!bytes.ok()) {
      status = bytes.status();
      break;
    }
    if (bytes->empty()) break;  // shorter than listed: caught below
    status = WriteAll(fd, *bytes, out.path);
    offset += static_cast<int64_t>(bytes->size());
    totals.bytes += static_cast<int64_t>(bytes->size());
    progress.Update(ProgressLine(totals));
  }
  if (status.ok() && offset != out.size) {
    status = Status::FailedPrecondition(fmt::format(
        "output {} of job {} changed while it was downloaded ({} bytes listed, {} read); "
        "run the command again",
        out.path, id, out.size, offset));
  }
  if (::close(fd) != 0 && status.ok()) status = FileError(errno, "closing " + out.path);
  if (status.ok() && ::renameat(dir_fd, part.c_str(), dir_fd, name.c_str()) != 0) {
    status = FileError(errno, fmt::format("renaming to {}/{}", dir, out.path));
  }
  if (!status.ok()) ::unlinkat(dir_fd, part.c_str(), 0);
  ::close(dir_fd);
  return status;
}

int RunGet(const GlobalOptions& g, const ArtifactOptions& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("artifacts get", c.status());
  auto id = JobArg(**c, o.job);
  if (!id.ok()) return Fail("artifacts get", id.status());
  std::string prefix = o.path;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  auto all = ListOutputs(**c, *id, nullptr);
  if (!all.ok()) return Fail("artifacts get", all.status());
  std::vector<Output> wanted;
  Totals totals;
  for (const auto& f : *all) {
    if (prefix.empty() || f.path == prefix || f.path.starts_with(prefix + "/")) {
      wanted.push_back(f);
      totals.bytes_total += f.size;
    }
  }
  if (wanted.empty()) {
    return Fail(
        "artifacts get",
        Status::NotFound(prefix.empty() ? fmt::format("job {} has no outputs in the store (yet: "
                                                      "`cohort artifacts ls {}` says where its "
                                                      "upload stands)",
                                                      *id, *id)
                                        : fmt::format("job {} has no output {} nor any below it; "
                                                      "`cohort artifacts ls {}` lists them",
                                                      *id, prefix, *id)));
  }
  totals.files_total = wanted.size();
  const std::string dir = o.dir.empty() ? fmt::format("job-{}", *id) : o.dir;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Fail("artifacts get", FileError(errno, "making " + dir));
  }
  Progress progress;
  for (const auto& f : wanted) {
    Status s = Download(**c, *id, f, dir, totals, progress);
    if (!s.ok()) {
      progress.Done();
      return Fail("artifacts get", s);
    }
    ++totals.files;
    progress.Update(ProgressLine(totals));
  }
  progress.Done();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - totals.start).count();
  if (o.json) {
    Json files = Json::array();
    for (const auto& f : wanted) files.push_back(Json{{"path", f.path}, {"size", f.size}});
    fmt::print("{}\n", Json{{"job", *id},
                            {"dir", dir},
                            {"files", files},
                            {"bytes", totals.bytes},
                            {"seconds", seconds}}
                           .dump(2));
  } else {
    fmt::print("job {}: {} file{}, {} into {}/ in {:.1f}s\n", *id, wanted.size(),
               wanted.size() == 1 ? "" : "s", FormatByteSizeApprox(totals.bytes), dir, seconds);
  }
  return 0;
}

}  // namespace

void AddArtifactCommands(CLI::App& app, GlobalOptions& g) {
  auto* artifacts = app.add_subcommand(
      "artifacts", "A job's outputs ($COHORT_OUTPUT_DIR), kept in the store after it ends");
  artifacts->require_subcommand(1);
  auto o = std::make_shared<ArtifactOptions>();

  auto* ls = artifacts->add_subcommand("ls", "Where a job's upload stands, and its outputs");
  ls->add_option("JOB", o->job, "The job")->required();
  AddOutputOption(ls, o->output);
  ls->callback([&g, o] { Finish(RunList(g, *o)); });

  auto* get = artifacts->add_subcommand(
      "get", "Download a job's outputs, all or one file or directory, into a directory");
  get->add_option("JOB", o->job, "The job")->required();
  get->add_option("PATH", o->path, "An output, or a directory of them (default: all)");
  get->add_option("-o,--dir", o->dir, "Where to write them (default: ./job-JOB)");
  get->add_flag("--json", o->json, "Print what was downloaded as JSON");
  get->callback([&g, o] { Finish(RunGet(g, *o)); });
}

}  // namespace cohort::cli
