// A job's id: positive, given by the master in submission order.
#pragma once

#include <cstdint>

namespace cohort {

using JobId = int64_t;

}  // namespace cohort
