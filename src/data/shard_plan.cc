#include "data/shard_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "common/strings.h"
#include "store/object_store.h"

namespace cohort::data {

namespace {

constexpr int64_t kTarBlock = 512;

int64_t RoundUpToBlock(int64_t bytes) { return (bytes + kTarBlock - 1) / kTarBlock * kTarBlock; }

}  // namespace

std::string ShownPath(std::string_view path) { return ValidUtf8(path.substr(0, 300)); }

StatusOr<SampleName> SplitSampleName(std::string_view path) {
  if (Status key = store::CheckKey(path); !key.ok()) {
    return Status::InvalidArgument(
        fmt::format("{}: cannot be a member's name: {}", ShownPath(path), key.message()));
  }
  // CheckKey lets overlong forms and surrogates through; the index is JSON, which must be UTF-8.
  if (ValidUtf8(path) != path) {
    return Status::InvalidArgument(
        fmt::format("{}: cannot be a member's name: it is not UTF-8", ShownPath(path)));
  }
  size_t base = path.rfind('/');
  base = base == std::string_view::npos ? 0 : base + 1;
  // WebDataset's rule: the key ends at the first '.' of the last segment that has something
  // before it, so "0001.seg.png" is the field "seg.png" of "0001".
  size_t dot = path.find('.', base + 1);
  if (path[base] == '.' || dot == std::string_view::npos || dot + 1 == path.size()) {
    return Status::InvalidArgument(fmt::format(
        "{}: has no extension, which would name its field in the sample (as in train/0001.jpg "
        "and train/0001.cls, the fields jpg and cls of the sample train/0001)",
        ShownPath(path)));
  }
  return SampleName{std::string(path.substr(0, dot)), std::string(path.substr(dot + 1))};
}

int64_t TarMemberBytes(std::string_view path, int64_t size) {
  int64_t bytes = kTarBlock + RoundUpToBlock(size);
  bool ascii = std::all_of(path.begin(), path.end(),
                           [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  // A pax header of its own: its header block and records of about the path's length. ustar's
  // name field holds 100 bytes (a prefix field more, split at a '/', which this ignores).
  if (path.size() > 100 || !ascii) bytes += kTarBlock + RoundUpToBlock(int64_t(path.size()) + 64);
  return bytes;
}

StatusOr<ShardPlan> PlanShards(std::vector<InputFile> files, int64_t target_bytes) {
  if (target_bytes < kMinShardTargetBytes) {
    return Status::InvalidArgument(
        fmt::format("shard size: {} bytes; at least {}", target_bytes, kMinShardTargetBytes));
  }
  if (files.empty()) return Status::InvalidArgument("no file to pack");
  if (int64_t(files.size()) > kMaxPackFiles) {
    return Status::InvalidArgument(
        fmt::format("{} files; at most {} in one packing", files.size(), kMaxPackFiles));
  }
  struct Named {
    SampleName name;
    InputFile file;
  };
  std::vector<Named> named;
  named.reserve(files.size());
  for (InputFile& f : files) {
    if (f.size < 0) {
      return Status::InvalidArgument(
          fmt::format("{}: size {} is negative", ShownPath(f.path), f.size));
    }
    COHORT_ASSIGN_OR_RETURN(SampleName name, SplitSampleName(f.path));
    named.push_back({std::move(name), std::move(f)});
  }
  // By key first: ordering by whole paths would put "x.d/y.jpg" between "x.a" and "x.z", two
  // files of the sample "x".
  std::sort(named.begin(), named.end(), [](const Named& a, const Named& b) {
    return std::tie(a.name.key, a.name.field) < std::tie(b.name.key, b.name.field);
  });
  for (size_t i = 1; i < named.size(); ++i) {
    if (named[i].file.path == named[i - 1].file.path) {
      return Status::InvalidArgument(
          fmt::format("{}: listed twice", ShownPath(named[i].file.path)));
    }
  }

  ShardPlan plan;
  ShardPlanEntry shard;
  auto close_shard = [&] {
    if (shard.files.empty()) return;
    plan.shards.push_back(std::move(shard));
    shard = ShardPlanEntry{};
  };
  for (size_t begin = 0; begin < named.size();) {
    size_t end = begin;
    int64_t sample_bytes = 0;
    while (end < named.size() && named[end].name.key == named[begin].name.key) {
      sample_bytes += TarMemberBytes(named[end].file.path, named[end].file.size);
      ++end;
    }
    if (shard.tar_bytes + sample_bytes > target_bytes) close_shard();
    if (shard.files.empty()) shard.first_key = named[begin].name.key;
    shard.last_key = named[begin].name.key;
    shard.samples += 1;
    shard.tar_bytes += sample_bytes;
    for (size_t i = begin; i < end; ++i) {
      plan.input_bytes += named[i].file.size;
      shard.files.push_back(std::move(named[i].file));
    }
    plan.samples += 1;
    begin = end;
  }
  close_shard();
  plan.files = int64_t(named.size());
  return plan;
}

}  // namespace cohort::data
