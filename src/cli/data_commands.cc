// cohort data: datasets (docs/data.md, docs/cli.md). `data put` uploads a directory as a new
// version of a dataset through the master, sending only the chunks the store lacks; `data ls`
// and `data rm` list and delete versions; `data pack` packs a directory of many small files into
// tar shards on this machine.
#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "cli/chunk_upload.h"
#include "cli/cli.h"
#include "cli/transfer_progress.h"
#include "common/units.h"
#include "data/dataset_files.h"
#include "data/shard_pack.h"
#include "model/dataset.h"
#include "model/json.h"

namespace cohort::cli {
namespace {

struct DataPackOptions {
  std::string dir;
  std::string out;
  std::string shard_size = "64Mi";
  std::string output = "table";
};

std::string PackProgressLine(const data::PackProgress& p) {
  return fmt::format("packing: {}/{} files, {}/{}, {}/{} shards", p.files_done, p.files_total,
                     FormatByteSizeApprox(p.bytes_done), FormatByteSizeApprox(p.bytes_total),
                     p.shards_done, p.shards_total);
}

// Packs `dir` into `out` with shards of about `shard_size` (--shard-size), a progress line on a
// terminal.
StatusOr<data::ShardIndex> PackShowingProgress(const std::string& dir, const std::string& out,
                                               const std::string& shard_size) {
  auto target = ParseByteSize(shard_size);
  if (!target.ok()) {
    return Status::InvalidArgument(fmt::format("--shard-size: {}", target.status().message()));
  }
  Progress progress;
  // A line per file would be most of the work for small files: redrawn at most 10 times a second.
  auto last = std::chrono::steady_clock::time_point{};
  auto index = data::PackDirectory(dir, out, *target, [&](const data::PackProgress& p) {
    auto now = std::chrono::steady_clock::now();
    bool done = p.shards_total > 0 && p.shards_done == p.shards_total;
    if (!done && now - last < std::chrono::milliseconds(100)) return;
    last = now;
    progress.Update(PackProgressLine(p));
  });
  progress.Done();
  return index;
}

int RunPack(const DataPackOptions& o) {
  auto started = std::chrono::steady_clock::now();
  auto index = PackShowingProgress(o.dir, o.out, o.shard_size);
  if (!index.ok()) return Fail("data pack", index.status());
  if (o.output == "json") {
    fmt::print("{}", data::ShardIndexJson(*index));
    return 0;
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  fmt::print("packed {} files ({} samples, {}) into {} shards ({}) in {:.1f}s: {}/{}\n",
             index->files, index->samples, FormatByteSizeApprox(index->input_bytes),
             index->shards.size(), FormatByteSizeApprox(index->bytes), seconds, o.out,
             data::kShardIndexFile);
  return 0;
}

struct DataPutOptions {
  std::string dir;
  std::string name;
  std::string team;
  bool is_public = false;
  bool pack = false;  // the shards of DIR, packed first, rather than its files
  std::string shard_size = "64Mi";
  std::string output = "table";
};

struct DataRefOptions {
  std::string ref;
  std::string output = "table";
};

// The team and name NAME gives (TEAM/NAME, or NAME and --team); no version: the master gives it.
StatusOr<DatasetRef> PutTarget(const DataPutOptions& o) {
  COHORT_ASSIGN_OR_RETURN(DatasetRef ref, ParseDatasetRef(o.name, "NAME"));
  if (ref.version) {
    return Status::InvalidArgument(fmt::format(
        "NAME: {} names a version; the master numbers a new one: give the name alone", o.name));
  }
  if (!o.team.empty() && !ref.team.empty() && o.team != ref.team) {
    return Status::InvalidArgument(
        fmt::format("NAME names team {} and --team {}: give one", ref.team, o.team));
  }
  if (ref.team.empty()) ref.team = o.team;
  return ref;
}

std::string PlainCount(size_t n, const char* what) {
  return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
}

// With --pack: DIR packed into shards in a directory of its own, removed when it goes.
struct PackedCopy {
  std::string dir;
  ~PackedCopy() {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

StatusOr<std::string> PackForPut(const DataPutOptions& o, PackedCopy& packed) {
  char tmpl[] = "/tmp/cohort-data-pack-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    return Status::Internal(
        fmt::format("cannot make a directory for the shards: {}", std::strerror(errno)));
  }
  packed.dir = tmpl;
  COHORT_ASSIGN_OR_RETURN(data::ShardIndex index,
                          PackShowingProgress(o.dir, packed.dir, o.shard_size));
  fmt::print(stderr, "packed {} into {} shards ({})\n",
             PlainCount(static_cast<size_t>(index.files), "file"), index.shards.size(),
             FormatByteSizeApprox(index.bytes));
  return packed.dir;
}

int RunDataPut(const GlobalOptions& g, const DataPutOptions& o) {
  auto target = PutTarget(o);
  if (!target.ok()) return Fail("data put", target.status());
  auto c = Connect(g);
  if (!c.ok()) return Fail("data put", c.status());
  PackedCopy packed;
  std::string dir = o.dir;
  if (o.pack) {
    auto shards = PackForPut(o, packed);
    if (!shards.ok()) return Fail("data put", shards.status());
    dir = *shards;
  }
  Progress progress;
  auto last = std::chrono::steady_clock::time_point{};
  auto scan = data::ScanDataset(dir, [&](int64_t done, int64_t total) {
    auto now = std::chrono::steady_clock::now();
    if (done != total && now - last < std::chrono::milliseconds(100)) return;
    last = now;
    progress.Update(
        fmt::format("hashing: {}/{}", FormatByteSizeApprox(done), FormatByteSizeApprox(total)));
  });
  progress.Done();
  if (!scan.ok()) return Fail("data put", scan.status());
  if (scan->skipped_count > 0) {
    fmt::print(stderr, "left out {} (links or special files){}{}\n",
               PlainCount(scan->skipped_count, "entry"), scan->skipped.empty() ? "" : ": ",
               fmt::join(scan->skipped, ", "));
  }
  auto sent = SendMissingChunks(**c, dir, *scan);
  if (!sent.ok()) return Fail("data put", sent.status());
  const size_t chunks_sent = sent->chunks;
  Json request{{"files", DatasetFilesJson(scan->files)}, {"public", o.is_public}};
  auto committed =
      Retrying([&] { return (*c)->CommitDataset(target->name, target->team, request); });
  if (!committed.ok()) return Fail("data put", committed.status());
  const std::string ref =
      fmt::format("{}:{}", target->name, (*committed)["version"].get<int64_t>());
  if (o.output == "json") {
    Json answer = *committed;
    answer["ref"] = ref;
    answer["chunks_sent"] = chunks_sent;
    answer["bytes_sent"] = sent->bytes;
    fmt::print("{}\n", answer.dump(2));
    return 0;
  }
  if (sent->missing_bytes == 0) {
    fmt::print(stderr, "0 of {} bytes sent: all chunks already stored\n", scan->bytes);
  } else if (sent->bytes == scan->bytes) {
    fmt::print(stderr, "{} of {} bytes sent ({})\n", sent->bytes, scan->bytes,
               PlainCount(chunks_sent, "chunk"));
  } else {
    fmt::print(stderr, "{} of {} bytes sent ({}), the rest already stored\n", sent->bytes,
               scan->bytes, PlainCount(chunks_sent, "chunk"));
  }
  fmt::print(stderr, "team {}: {}, {}{}\n", (*committed)["team"].get<std::string>(),
             PlainCount(scan->files.size(), "file"), FormatByteSizeApprox(scan->bytes),
             o.is_public ? ", public" : "");
  fmt::print("{}\n", ref);
  return 0;
}

std::string VersionRow(const Json& v) {
  return fmt::format("{}:{}", v["name"].get<std::string>(), v["version"].get<int64_t>());
}

int RunDataList(const GlobalOptions& g, const DataRefOptions& o) {
  std::optional<DatasetRef> ref;
  if (!o.ref.empty()) {
    auto parsed = ParseDatasetRef(o.ref, "NAME");
    if (!parsed.ok()) return Fail("data ls", parsed.status());
    ref = *parsed;
  }
  auto c = Connect(g);
  if (!c.ok()) return Fail("data ls", c.status());
  if (!ref) {
    // Every dataset the caller may read, a page at a time.
    Json all = Json::array();
    std::string after;
    for (;;) {
      auto page = (*c)->Datasets({{"after", after}, {"limit", "1000"}});
      if (!page.ok()) return Fail("data ls", page.status());
      for (const auto& d : (*page)["datasets"]) all.push_back(d);
      if (!(*page)["more"].get<bool>() || (*page)["datasets"].empty()) break;
      const Json& lastd = all.back();
      after = lastd["team"].get<std::string>() + "/" + lastd["name"].get<std::string>();
    }
    if (o.output == "json") {
      fmt::print("{}\n", Json{{"datasets", all}}.dump(2));
      return 0;
    }
    Table table({"TEAM", "NAME", "VERSIONS", "LATEST", "FILES", "SIZE", "PUBLIC"});
    for (const auto& d : all) {
      const Json& latest = d["latest"];
      table.Add({d["team"].get<std::string>(), d["name"].get<std::string>(),
                 std::to_string(d["versions"].get<int64_t>()),
                 std::to_string(latest["version"].get<int64_t>()),
                 std::to_string(latest["file_count"].get<int64_t>()),
                 FormatByteSizeApprox(latest["bytes"].get<int64_t>()),
                 latest["public"].get<bool>() ? "yes" : "no"});
    }
    table.Print(stdout);
    return 0;
  }
  StatusOr<Json> answer = ref->version
                              ? (*c)->DatasetVersion(ref->name, *ref->version, ref->team, true)
                              : (*c)->Dataset(ref->name, ref->team);
  if (!answer.ok()) return Fail("data ls", answer.status());
  if (o.output == "json") {
    fmt::print("{}\n", answer->dump(2));
    return 0;
  }
  if (ref->version) {
    const Json& v = *answer;
    fmt::print("{} (team {}, {}, {}, put by {} at {}{})\n", VersionRow(v),
               v["team"].get<std::string>(),
               PlainCount(static_cast<size_t>(v["file_count"].get<int64_t>()), "file"),
               FormatByteSizeApprox(v["bytes"].get<int64_t>()), v["user"].get<std::string>(),
               v["created_at"].get<std::string>(), v["public"].get<bool>() ? ", public" : "");
    Table table({"PATH", "SIZE", "SHA256"});
    for (const auto& f : v["files"]) {
      table.Add({f["path"].get<std::string>(), FormatByteSizeApprox(f["size"].get<int64_t>()),
                 f["sha256"].get<std::string>().substr(0, 16)});
    }
    table.Print(stdout);
    return 0;
  }
  Table table({"VERSION", "FILES", "SIZE", "PUBLIC", "USER", "CREATED"});
  for (const auto& v : (*answer)["versions"]) {
    table.Add({VersionRow(v), std::to_string(v["file_count"].get<int64_t>()),
               FormatByteSizeApprox(v["bytes"].get<int64_t>()),
               v["public"].get<bool>() ? "yes" : "no", v["user"].get<std::string>(),
               v["created_at"].get<std::string>()});
  }
  table.Print(stdout);
  return 0;
}

int RunDataRemove(const GlobalOptions& g, const DataRefOptions& o) {
  auto ref = ParseDatasetRef(o.ref, "NAME:VERSION");
  if (!ref.ok()) return Fail("data rm", ref.status());
  if (!ref->version) {
    return Fail("data rm", Status::InvalidArgument(fmt::format(
                               "NAME:VERSION: {} names no version; versions are deleted one at a "
                               "time (`cohort data ls {}` lists them)",
                               o.ref, o.ref)));
  }
  auto c = Connect(g);
  if (!c.ok()) return Fail("data rm", c.status());
  auto answer = (*c)->DeleteDatasetVersion(ref->name, *ref->version, ref->team);
  if (!answer.ok()) return Fail("data rm", answer.status());
  if (o.output == "json") {
    fmt::print("{}\n", answer->dump(2));
    return 0;
  }
  fmt::print("deleted {}/{}:{}\n", (*answer)["team"].get<std::string>(), ref->name, *ref->version);
  return 0;
}

}  // namespace

void AddDataCommands(CLI::App& app, GlobalOptions& g) {
  auto* data = app.add_subcommand(
      "data",
      "Datasets: directories uploaded once as numbered versions, shared by the team (or everyone, "
      "when public); many small files packed into shards (docs/data.md)");
  data->require_subcommand(1);

  auto put = std::make_shared<DataPutOptions>();
  auto* u = data->add_subcommand(
      "put",
      "Upload DIR as the next version of dataset NAME (NAME:1, NAME:2, ...) and print "
      "NAME:VERSION. "
      "Files are cut into chunks of 8 MiB named by their SHA-256: only those the store lacks are "
      "sent, so an unchanged file is never sent twice; links and special files are left out");
  u->add_option("DIR", put->dir, "The directory to upload")->required();
  u->add_option("NAME", put->name,
                "The dataset: NAME or TEAM/NAME (lowercase letters, digits, '.', '_', '-')")
      ->required();
  u->add_option("--team", put->team, "The team whose dataset it is (default: yours, as for jobs)");
  u->add_flag("--public", put->is_public,
              "Let every user read this version, not only the team's members");
  u->add_flag("--pack", put->pack,
              "Store DIR's files packed into tar shards with an index (as `cohort data pack` "
              "makes them), for many small files: read them with python/cohort_shards.py");
  u->add_option("--shard-size", put->shard_size, "With --pack: about how large each shard is")
      ->capture_default_str();
  AddOutputOption(u, put->output);
  u->callback([&g, put] { Finish(RunDataPut(g, *put)); });

  auto ls = std::make_shared<DataRefOptions>();
  auto* l = data->add_subcommand(
      "ls",
      "List the datasets you may read (your teams' and public ones); with NAME, its versions; "
      "with NAME:VERSION, that version's files");
  l->add_option("NAME", ls->ref, "NAME, TEAM/NAME, NAME:VERSION or TEAM/NAME:VERSION");
  AddOutputOption(l, ls->output);
  l->callback([&g, ls] { Finish(RunDataList(g, *ls)); });

  auto rm = std::make_shared<DataRefOptions>();
  auto* r = data->add_subcommand(
      "rm",
      "Delete one version of a dataset (its team's members may). The chunks stay in the store: "
      "other versions may share them");
  r->add_option("NAME:VERSION", rm->ref, "The version: NAME:VERSION or TEAM/NAME:VERSION")
      ->required();
  AddOutputOption(r, rm->output);
  r->callback([&g, rm] { Finish(RunDataRemove(g, *rm)); });

  auto pack = std::make_shared<DataPackOptions>();
  auto* p = data->add_subcommand(
      "pack",
      "Pack a directory of many small files into tar shards, each with a member table (where each "
      "file's data lies), and an index, on this machine, for "
      "python/cohort_shards.py to read. Files sharing a key are one sample (train/0001.jpg and "
      "train/0001.cls: the fields jpg and cls of train/0001), never split across shards; links, "
      "special files and files without an extension are refused");
  p->add_option("DIR", pack->dir, "The directory to pack")->required();
  p->add_option("OUT", pack->out,
                "Where the shards and index.json go: a new or empty directory, not inside DIR")
      ->required();
  p->add_option("--shard-size", pack->shard_size,
                "The most bytes of a shard (a larger sample is a shard of its own): 64Mi, 1Gi, "
                "500M")
      ->capture_default_str();
  AddOutputOption(p, pack->output);
  p->callback([pack] { Finish(RunPack(*pack)); });
}

}  // namespace cohort::cli
