// cohort data: datasets (docs/data.md). So far `data pack`, which packs a directory of many small
// files into tar shards on this machine; put, ls and rm come with datasets in the store.
#include <fmt/format.h>

#include <chrono>

#include "cli/cli.h"
#include "common/units.h"
#include "data/shard_pack.h"

namespace cohort::cli {
namespace {

struct DataPackOptions {
  std::string dir;
  std::string out;
  std::string shard_size = "64Mi";
  std::string output = "table";
};

std::string ProgressLine(const data::PackProgress& p) {
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
    progress.Update(ProgressLine(p));
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

}  // namespace

void AddDataCommands(CLI::App& app, GlobalOptions& g) {
  auto* data =
      app.add_subcommand("data", "Datasets: many small files packed into shards (docs/data.md)");
  data->require_subcommand(1);
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
