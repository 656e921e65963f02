// Where one upload of a job's outputs stands (agent/artifact_uploads.h): what an agent reports
// of it and what `cohort status` shows ("artifacts: uploading (3 of 10 files, 1.2 GiB)").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "common/enum_names.h"
#include "common/time.h"

namespace cohort {

enum class UploadState {
  kWaiting,    // listed; the master has not yet said it may begin
  kUploading,  // files going into the store, one at a time
  kStored,     // every file is in the store
  kFailed,     // refused by the master (quota) or by the store for good: `reason` says why
};
inline constexpr auto kUploadStateNames = std::to_array<EnumName<UploadState>>({
    {UploadState::kWaiting, "waiting"},
    {UploadState::kUploading, "uploading"},
    {UploadState::kStored, "stored"},
    {UploadState::kFailed, "failed"},
});
inline const char* UploadStateName(UploadState s) { return NameOf(kUploadStateNames, s); }

struct UploadProgress {
  std::string id;  // the agent's name for it: the id of the task whose end began it
  UploadState state = UploadState::kWaiting;
  int64_t files_done = 0, files_total = 0;
  int64_t bytes_done = 0, bytes_total = 0;
  int64_t files_skipped = 0;  // links and special files left out (store/file_tree.h)
  std::string reason;         // why it failed; or, while it is retried, the store's last error
  std::optional<Timestamp> retry_at = {};
};

}  // namespace cohort
