#include "model/restored_checkpoint.h"

#include <fmt/format.h>

#include "common/units.h"

namespace cohort {

std::string DescribeRestored(const RestoredCheckpoint& r) {
  std::string step = r.step ? fmt::format(" at step {}", *r.step) : "";
  std::string bytes = r.bytes < 1024 ? fmt::format("{} byte{}", r.bytes, r.bytes == 1 ? "" : "s")
                                     : FormatByteSizeApprox(r.bytes);
  return fmt::format("the checkpoint of attempt {}{} ({} file{}, {})", r.attempt, step, r.files,
                     r.files == 1 ? "" : "s", bytes);
}

}  // namespace cohort
