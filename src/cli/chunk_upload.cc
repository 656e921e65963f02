#include "cli/chunk_upload.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <vector>

#include "cli/cli.h"
#include "cli/transfer_progress.h"

namespace cohort::cli {
namespace {

// Hashes asked about at once (the master's bound on POST /api/v1/blobs/missing).
constexpr size_t kBlobsPerAsk = 1000;

}  // namespace

StatusOr<ChunksSent> SendMissingChunks(client::CohortClient& c, const std::string& dir,
                                       const data::DatasetScan& scan) {
  // Which chunks the store lacks, asked in batches, each hash once.
  std::vector<std::string> hashes;
  std::set<std::string> seen;
  for (const auto& f : scan.files) {
    for (const auto& chunk : f.chunks) {
      if (seen.insert(chunk.sha256).second) hashes.push_back(chunk.sha256);
    }
  }
  std::set<std::string> missing;
  for (size_t i = 0; i < hashes.size(); i += kBlobsPerAsk) {
    std::vector<std::string> batch(
        hashes.begin() + static_cast<ptrdiff_t>(i),
        hashes.begin() + static_cast<ptrdiff_t>(std::min(hashes.size(), i + kBlobsPerAsk)));
    COHORT_ASSIGN_OR_RETURN(auto answer, Retrying([&] { return c.MissingBlobs(batch); }));
    missing.insert(answer.begin(), answer.end());
  }
  Progress progress;
  Totals totals;
  totals.files_total = scan.files.size();
  for (const auto& f : scan.files) {
    for (const auto& chunk : f.chunks) {
      if (missing.contains(chunk.sha256)) totals.bytes_total += chunk.size;
    }
  }
  ChunksSent sent;
  sent.missing_bytes = totals.bytes_total;
  // A chunk two files share is sent once.
  for (const auto& f : scan.files) {
    for (size_t i = 0; i < f.chunks.size(); ++i) {
      if (!missing.contains(f.chunks[i].sha256)) continue;
      COHORT_ASSIGN_OR_RETURN(std::string bytes, data::ReadChunk(dir, f, i));
      auto put = Retrying([&] { return c.PutBlob(f.chunks[i].sha256, bytes); });
      if (!put.ok()) {
        return Status(put.status().code(),
                      fmt::format("uploading {}: {}", f.path, put.status().message()));
      }
      missing.erase(f.chunks[i].sha256);
      ++sent.chunks;
      sent.bytes += f.chunks[i].size;
      totals.bytes = sent.bytes;
      progress.Update(ProgressLine(totals));
    }
    ++totals.files;
  }
  if (totals.bytes_total > 0) progress.Update(ProgressLine(totals));
  progress.Done();
  return sent;
}

}  // namespace cohort::cli
