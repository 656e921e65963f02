#include "model/image_pull.h"

#include <fmt/format.h>

#include "common/units.h"

namespace cohort {

std::string DescribeImagePull(const ImagePull& pull) {
  if (pull.finished && pull.done_bytes == 0) {
    return fmt::format("pulled image {} in {} (its layers were on the node already)", pull.image,
                       FormatDuration(pull.took));
  }
  if (pull.finished) {
    return fmt::format("pulled image {}: {} in {}", pull.image,
                       FormatByteSizeApprox(pull.done_bytes), FormatDuration(pull.took));
  }
  if (pull.total_bytes <= 0) {
    return fmt::format("pulling image {}: {} so far ({})", pull.image,
                       FormatByteSizeApprox(pull.done_bytes), FormatDuration(pull.took));
  }
  return fmt::format("pulling image {}: {} of {} ({})", pull.image,
                     FormatByteSizeApprox(pull.done_bytes), FormatByteSizeApprox(pull.total_bytes),
                     FormatDuration(pull.took));
}

}  // namespace cohort
