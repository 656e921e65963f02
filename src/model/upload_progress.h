// Where one upload of a job's outputs stands (agent/artifact_uploads.h): what an agent reports
// of it and what `cohort status` shows ("artifacts: uploading (3 of 10 files, 1.2 GiB)").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

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

// Bounds of what an agent reports of an upload (docs/data.md, "Bad input"), so that it cannot
// make the master keep megabytes per job: a longer id is refused (ids are the agent's own, a
// task's id: one this long is not), and a longer reason is cut to this many bytes, ending in
// "…" (a store's error can be a long body of XML; refusing it would refuse the whole report).
inline constexpr size_t kMaxUploadIdBytes = 1024;
inline constexpr size_t kMaxUploadReasonBytes = 1024;

// `reason` as reported: itself if within kMaxUploadReasonBytes, otherwise its first bytes, cut
// at a character's start, and "…", kMaxUploadReasonBytes in all at most.
inline std::string BoundedUploadReason(std::string_view reason) {
  if (reason.size() <= kMaxUploadReasonBytes) return std::string(reason);
  constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // U+2026, in UTF-8
  size_t cut = kMaxUploadReasonBytes - kEllipsis.size();
  // Back to the first byte of a UTF-8 sequence (not a 10xxxxxx continuation byte).
  while (cut > 0 && (static_cast<unsigned char>(reason[cut]) & 0xC0) == 0x80) --cut;
  return std::string(reason.substr(0, cut)) + std::string(kEllipsis);
}

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
