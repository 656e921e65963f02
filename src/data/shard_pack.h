// Packs a directory of many small files into tar shards of about a target size, with an index
// (docs/data.md, "Small files into shards"): what `cohort data pack` and `cohort data put --pack`
// do. Which file goes where is data/shard_plan.h; this walks the directory, writes the shards
// through libarchive and the index, and checks what it reads.
//
// The output directory holds shard-000000.tar, shard-000001.tar, ..., beside each its member
// table (shard-000000.idx: each member's name, and the offset and size of its data in the
// shard, so that a reader slices samples out of large reads without parsing a tar header), and
// index.json, which holds each table's size and SHA-256. Shards and tables are written under
// temporary names (".shard-000000.tar.tmp"), each fsynced, then renamed, and the index is
// written last (atomically): a directory without index.json is not a packed one, whatever else
// it holds. The same input gives byte-identical shards and index: members are in
// plan order, named relative to the source directory, with mode 0644, mtime 0, uid and gid 0
// and no owner names.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "data/shard_plan.h"

namespace cohort::data {

// 2: each shard has a member table. Readers of version 2 read version 1 (no tables) with a tar
// parser.
inline constexpr int kShardIndexVersion = 2;
inline constexpr const char* kShardIndexFile = "index.json";
inline constexpr const char* kMemberTableFormat = "cohort-shard-members";
inline constexpr int kMemberTableVersion = 1;

// Where a packing is, for a progress line. Totals are known once the directory is walked.
struct PackProgress {
  int64_t files_done = 0;
  int64_t files_total = 0;
  int64_t bytes_done = 0;  // of the files' contents
  int64_t bytes_total = 0;
  int64_t shards_done = 0;
  int64_t shards_total = 0;
};

// Where a member's data lies in its shard (after its tar header, and a pax header before that
// where it has one).
struct MemberSpan {
  std::string name;
  int64_t offset = 0;  // of its first byte of data; a multiple of 512
  int64_t size = 0;
};

// A shard's member table file, as index.json names it.
struct MemberTableFile {
  std::string name;  // "shard-000000.idx"
  int64_t bytes = 0;
  std::string sha256;  // lowercase hex, of the whole file
};

struct PackedShard {
  std::string name;  // "shard-000000.tar"
  int64_t bytes = 0;
  std::string sha256;  // lowercase hex, of the whole file
  int64_t samples = 0;
  int64_t files = 0;
  std::string first_key;
  std::string last_key;
  MemberTableFile members;
};

// What index.json holds.
struct ShardIndex {
  int version = kShardIndexVersion;
  int64_t target_bytes = 0;
  std::vector<PackedShard> shards;
  int64_t files = 0;
  int64_t samples = 0;
  int64_t input_bytes = 0;  // the files' contents
  int64_t bytes = 0;        // the shards'
};

// index.json's text (JSON, keys in a fixed order, ending in a newline).
std::string ShardIndexJson(const ShardIndex& index);

// A member table's text: compact JSON (read once per shard, by programs), in columns rather
// than an object per member (fewer bytes: no field name repeated per member):
// {"format":"cohort-shard-members","version":1,"shard":"shard-000000.tar",
//  "names":[...],"offsets":[...],"sizes":[...]}, ending in a newline.
std::string MemberTableJson(const std::string& shard_name, const std::vector<MemberSpan>& members);

// The regular files under `source_dir` with their sizes, paths relative to it, in no particular
// order. Refused, naming the path: a symbolic link (packing it would either copy what it points
// to, perhaps outside the directory, or keep a link no reader resolves), anything but a regular
// file or directory (a device, a socket, a FIFO), more than `max_files` files (stopping there,
// not after listing them all), an unreadable directory. Empty directories are left out: a shard
// holds files.
StatusOr<std::vector<InputFile>> ListSourceFiles(const std::string& source_dir,
                                                 int64_t max_files = kMaxPackFiles);

// Packs `source_dir` into `out_dir` (made if absent, else it must be empty; not inside
// `source_dir`). `progress`, if given, is called after each file and each shard. A file that
// changed size while being packed, or that became a link, fails the packing. On failure the
// shards written so far are removed and no index is written.
StatusOr<ShardIndex> PackDirectory(const std::string& source_dir, const std::string& out_dir,
                                   int64_t target_bytes = kDefaultShardTargetBytes,
                                   const std::function<void(const PackProgress&)>& progress = {});

}  // namespace cohort::data
