// Which file goes into which shard when a directory of many small files is packed into tar
// shards (docs/data.md, "Small files into shards"). Pure: a function of the file list and the
// target size, so that the same input always gives the same shards.
//
// Samples are WebDataset's: the files whose paths share a key are one sample, the key being the
// path up to the first '.' of its last segment, the rest the sample's field ("train/0001.jpg"
// and "train/0001.seg.png" are the fields "jpg" and "seg.png" of the sample "train/0001"). A
// sample is never split across shards; samples go in key order (bytes), a sample's files in
// field order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace cohort::data {

// How many files one packing takes: the plan, the index and the reader's bookkeeping stay in
// memory, about 100 bytes a file.
inline constexpr int64_t kMaxPackFiles = 10'000'000;
// The smallest target a shard may be given: below a few tar blocks, every sample is a shard.
inline constexpr int64_t kMinShardTargetBytes = 4096;
inline constexpr int64_t kDefaultShardTargetBytes = int64_t{64} << 20;

struct InputFile {
  std::string path;  // relative to the packed directory, '/'-separated
  int64_t size = 0;
};

// A path split into its sample's key and its field: "train/0001.seg.png" -> {"train/0001",
// "seg.png"}.
struct SampleName {
  std::string key;
  std::string field;
};

// The key and field of a member path; InvalidArgument naming the path when it has none (no '.'
// after the first character of its last segment: "LICENSE", ".hidden") or could not be an
// object store key (store::CheckKey: relative, UTF-8, at most 1,024 bytes, no empty, "." or ".."
// segment; pax itself has no length limit): a member's name could become a key, so shards hold
// only what `cohort data put` stores.
StatusOr<SampleName> SplitSampleName(std::string_view path);

// A path as messages show it: its first 300 bytes, bytes that are not UTF-8 replaced by U+FFFD
// so that the message is.
std::string ShownPath(std::string_view path);

// The bytes a file takes in a tar shard: its header, and its data rounded up to whole 512-byte
// blocks; a name too long for the ustar header adds a pax header of its own.
int64_t TarMemberBytes(std::string_view path, int64_t size);

// The end of a tar archive: two zero blocks (shards are not padded to a record size).
inline constexpr int64_t kTarEndBytes = 1024;

struct ShardPlanEntry {
  std::vector<InputFile> files;  // in order: by key, then by field
  int64_t samples = 0;
  int64_t tar_bytes = kTarEndBytes;  // TarMemberBytes summed, and the archive's end
  std::string first_key;
  std::string last_key;
};

struct ShardPlan {
  std::vector<ShardPlanEntry> shards;
  int64_t files = 0;
  int64_t samples = 0;
  int64_t input_bytes = 0;  // the files' sizes summed
};

// Orders the files into samples and cuts them into shards of at most `target_bytes` of tar
// each: a shard ends before the sample that would take it past the target, and a sample
// larger than the target is a shard of its own. InvalidArgument, naming the path or the field,
// for no file, more than kMaxPackFiles, a negative size, a bad path, the same path twice, or a
// target below kMinShardTargetBytes.
StatusOr<ShardPlan> PlanShards(std::vector<InputFile> files,
                               int64_t target_bytes = kDefaultShardTargetBytes);

}  // namespace cohort::data
