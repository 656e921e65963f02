// The progress bar of the commands that move files to or from the master (cohort artifacts get,
// cohort data put): files and bytes done of all, and the rate so far.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/units.h"

namespace cohort::cli {

struct Totals {
  size_t files = 0, files_total = 0;
  int64_t bytes = 0, bytes_total = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

inline std::string ProgressLine(const Totals& t) {
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t.start).count();
  int64_t rate = seconds > 0 ? static_cast<int64_t>(static_cast<double>(t.bytes) / seconds) : 0;
  int width = 30;
  int filled = t.bytes_total > 0 ? static_cast<int>(width * t.bytes / t.bytes_total) : width;
  return fmt::format("[{}{}] {}/{} files, {}/{}, {}/s", std::string(filled, '#'),
                     std::string(width - filled, '.'), t.files, t.files_total,
                     FormatByteSizeApprox(t.bytes), FormatByteSizeApprox(t.bytes_total),
                     FormatByteSizeApprox(rate));
}

}  // namespace cohort::cli
