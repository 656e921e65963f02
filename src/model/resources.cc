#include "model/resources.h"

#include <fmt/format.h>

#include "common/units.h"

namespace cohort {

std::string Resources::ToString() const {
  return fmt::format("{} GPU{}, {} CPU{}, {}", gpus, gpus == 1 ? "" : "s",
                     FormatMilliCpus(milli_cpus), milli_cpus == 1000 ? "" : "s",
                     FormatByteSizeApprox(memory_bytes));
}

}  // namespace cohort
