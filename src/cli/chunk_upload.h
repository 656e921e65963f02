// Sending a directory's chunks to the master (docs/data.md): what `cohort data put` and the code
// of `cohort run` and `cohort submit` share. Only the chunks the store lacks are sent, each once,
// with a progress bar on a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "client/cohort_client.h"
#include "common/status.h"
#include "data/dataset_files.h"

namespace cohort::cli {

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

struct ChunksSent {
  size_t chunks = 0;
  int64_t bytes = 0;
  int64_t missing_bytes = 0;  // what the store lacked: bytes, once all went
};

// Sends the chunks of `scan` (of the files under `dir`) that the store lacks, in file order.
StatusOr<ChunksSent> SendMissingChunks(client::CohortClient& c, const std::string& dir,
                                       const data::DatasetScan& scan);

}  // namespace cohort::cli
