// cohort data: datasets (docs/data.md, docs/cli.md). `data put` uploads a directory as a new
// version of a dataset through the master, sending only the chunks the store lacks; `data ls`
// and `data rm` list and delete versions; `data pack` packs a directory of many small files into
// tar shards on this machine.
#include <fmt/format.h>

#include <chrono>
#include <set>
#include <thread>

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

int RunPack(const DataPackOptions& o) {
  auto target = ParseByteSize(o.shard_size);
  if (!target.ok()) {
    return Fail("data pack", Status::InvalidArgument(
                                 fmt::format("--shard-size: {}", target.status().message())));
  }
  Progress progress;
  // A line per file would be most of the work for small files: redrawn at most 10 times a second.
  auto last = std::chrono::steady_clock::time_point{};
  auto started = std::chrono::steady_clock::now();
  auto index = data::PackDirectory(o.dir, o.out, *target, [&](const data::PackProgress& p) {
    auto now = std::chrono::steady_clock::now();
    bool done = p.shards_total > 0 && p.shards_done == p.shards_total;
    if (!done && now - last < std::chrono::milliseconds(100)) return;
    last = now;
    progress.Update(PackProgressLine(p));
  });
  progress.Done();
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
  std::string output = "table";
};

struct DataRefOptions {
  std::string ref;
  std::string output = "table";
};

// Hashes asked about at once (the master's bound on POST /api/v1/blobs/missing).
constexpr size_t kBlobsPerAsk = 1000;

// `call`, again while the master answers 503 (its store worker is busy with other uploads).
template <typename Call>
auto Retrying(Call call) -> decltype(call()) {
  auto wait = std::chrono::milliseconds(200);
  for (int attempt = 1;; ++attempt) {
    auto result = call();
    if (result.ok() || result.status().code() != StatusCode::kUnavailable || attempt == 10) {
      return result;
    }
    std::this_thread::sleep_for(wait);
    wait = std::min<std::chrono::milliseconds>(wait * 2, std::chrono::seconds(5));
  }
}

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

int RunDataPut(const GlobalOptions& g, const DataPutOptions& o) {
  auto target = PutTarget(o);
  if (!target.ok()) return Fail("data put", target.status());
  auto c = Connect(g);
  if (!c.ok()) return Fail("data put", c.status());
  Progress progress;
  auto last = std::chrono::steady_clock::time_point{};
  auto scan = data::ScanDataset(o.dir, [&](int64_t done, int64_t total) {
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
  // Which chunks the store lacks, asked in batches, each hash once.
  std::vector<std::string> hashes;
  std::set<std::string> seen;
  for (const auto& f : scan->files) {
    for (const auto& chunk : f.chunks) {
      if (seen.insert(chunk.sha256).second) hashes.push_back(chunk.sha256);
    }
  }
  std::set<std::string> missing;
  for (size_t i = 0; i < hashes.size(); i += kBlobsPerAsk) {
    std::vector<std::string> batch(
        hashes.begin() + static_cast<ptrdiff_t>(i),
        hashes.begin() + static_cast<ptrdiff_t>(std::min(hashes.size(), i + kBlobsPerAsk)));
    auto answer = Retrying([&] { return (*c)->MissingBlobs(batch); });
    if (!answer.ok()) return Fail("data put", answer.status());
    missing.insert(answer->begin(), answer->end());
  }
  Totals totals;
  totals.files_total = scan->files.size();
  for (const auto& f : scan->files) {
    for (const auto& chunk : f.chunks) {
      if (missing.contains(chunk.sha256)) totals.bytes_total += chunk.size;
    }
  }
  // Sent in file order; a chunk two files share is sent once.
  size_t chunks_sent = 0;
  for (const auto& f : scan->files) {
    for (size_t i = 0; i < f.chunks.size(); ++i) {
      if (!missing.contains(f.chunks[i].sha256)) continue;
      auto bytes = data::ReadChunk(o.dir, f, i);
      if (!bytes.ok()) return Fail("data put", bytes.status());
      auto sent = Retrying([&] { return (*c)->PutBlob(f.chunks[i].sha256, *bytes); });
      if (!sent.ok()) {
        return Fail("data put", Status(sent.status().code(), fmt::format("uploading {}: {}", f.path,
                                                                         sent.status().message())));
      }
      missing.erase(f.chunks[i].sha256);
      ++chunks_sent;
      totals.bytes += f.chunks[i].size;
      progress.Update(ProgressLine(totals));
    }
    ++totals.files;
  }
  if (totals.bytes_total > 0) progress.Update(ProgressLine(totals));
  progress.Done();
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
    answer["bytes_sent"] = totals.bytes;
    fmt::print("{}\n", answer.dump(2));
    return 0;
  }
  if (totals.bytes_total == 0) {
    fmt::print(stderr, "0 of {} bytes sent: all chunks already stored\n", scan->bytes);
  } else if (totals.bytes == scan->bytes) {
    fmt::print(stderr, "{} of {} bytes sent ({})\n", totals.bytes, scan->bytes,
               PlainCount(chunks_sent, "chunk"));
  } else {
    fmt::print(stderr, "{} of {} bytes sent ({}), the rest already stored\n", totals.bytes,
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
