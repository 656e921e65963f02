// What pulling a dataset costs a task's start (docs/data.md, "Jobs that read datasets"): a
// version fetched from the store into the node's cache (every chunk read, checked against its
// SHA-256, and written; then every file against its own), against the same bytes copied by
// `cp -r` from the store's directory, and a version the cache already holds. Directory store on
// the local disk: the store's own speed (a network, an S3 gateway) comes on top. Prints a table;
// docs/performance.md records this machine's figures.
//
//   build/bin/dataset_pull_bench [--files 16] [--file-mib 16] [--runs 5] [--dir /tmp]
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "agent/dataset_cache.h"
#include "store/chunked_files_testing.h"
#include "store/directory_store.h"

namespace {

using namespace cohort;
namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;

double Seconds(Steady::duration d) { return std::chrono::duration<double>(d).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times a dataset's pull into a node's cache, cold and warm, against cp -r"};
  int files = 16;
  int file_mib = 16;
  int runs = 5;
  std::string dir = fs::temp_directory_path().string();
  app.add_option("--files", files, "Files in the dataset");
  app.add_option("--file-mib", file_mib, "MiB in each file");
  app.add_option("--runs", runs, "Runs of each; the median is printed");
  app.add_option("--dir", dir, "Where the store and the caches go");
  CLI11_PARSE(app, argc, argv);

  const fs::path root = fs::path(dir) / fmt::format("cohort-pull-bench-{}", ::getpid());
  store::testing::RemoveReadOnlyTree(root);
  auto opened = store::OpenDirectoryStore((root / "store").string());
  if (!opened.ok()) {
    fmt::print(stderr, "dataset_pull_bench: {}\n", opened.status().ToString());
    return 1;
  }
  store::ObjectStore& store = **opened;
  std::mt19937_64 random(7);
  std::vector<DatasetFile> manifest;
  const size_t file_bytes = static_cast<size_t>(file_mib) << 20;
  for (int i = 0; i < files; ++i) {
    std::string content(file_bytes, '\0');
    for (size_t at = 0; at + 8 <= content.size(); at += 8) {
      uint64_t word = random();
      std::memcpy(content.data() + at, &word, 8);
    }
    manifest.push_back(store::testing::PutChunkedFile(store, fmt::format("shard-{:03}.bin", i),
                                                      content, kMaxDatasetChunkBytes));
  }
  const std::string key = "datasets/bench/pull/1.json";
  if (Status s = store::testing::PutManifest(store, key, manifest); !s.ok()) {
    fmt::print(stderr, "dataset_pull_bench: {}\n", s.ToString());
    return 1;
  }
  const double mib = static_cast<double>(files) * file_mib;

  std::vector<double> cold, warm, copy;
  for (int run = 0; run < runs; ++run) {
    const fs::path cache_dir = root / fmt::format("cache-{}", run);
    agent::DatasetCache cache(cache_dir.string(), int64_t{1} << 40);
    ::sync();
    auto start = Steady::now();
    auto first = cache.Acquire(store, key);
    cold.push_back(Seconds(Steady::now() - start));
    if (!first.ok() || !first->fetched) {
      fmt::print(stderr, "dataset_pull_bench: {}\n", first.status().ToString());
      return 1;
    }
    start = Steady::now();
    auto second = cache.Acquire(store, key);
    warm.push_back(Seconds(Steady::now() - start));
    if (!second.ok() || second->fetched) {
      fmt::print(stderr, "dataset_pull_bench: the second acquire fetched again\n");
      return 1;
    }
    ::close(first->lock_fd);
    ::close(second->lock_fd);
    store::testing::RemoveReadOnlyTree(cache_dir);

    const fs::path copied = root / fmt::format("copy-{}", run);
    ::sync();
    start = Steady::now();
    int rc = std::system(
        fmt::format("cp -r '{}' '{}'", (root / "store" / "objects").string(), copied.string())
            .c_str());
    copy.push_back(Seconds(Steady::now() - start));
    if (rc != 0) {
      fmt::print(stderr, "dataset_pull_bench: cp failed\n");
      return 1;
    }
    store::testing::RemoveReadOnlyTree(copied);
  }
  fmt::print("dataset: {} files of {} MiB ({:.0f} MiB) in chunks of 8 MiB; median of {} runs\n\n",
             files, file_mib, mib, runs);
  fmt::print("| what | seconds | MiB/s |\n|---|---|---|\n");
  fmt::print("| pull into the cache (read, hash, write, check) | {:.3f} | {:.0f} |\n", Median(cold),
             mib / Median(cold));
  fmt::print("| `cp -r` of the store's files | {:.3f} | {:.0f} |\n", Median(copy),
             mib / Median(copy));
  fmt::print("| found in the cache | {:.6f} | |\n", Median(warm));
  fmt::print("\npull / cp: {:.2f}x\n", Median(cold) / Median(copy));
  store::testing::RemoveReadOnlyTree(root);
  return 0;
}
