// The resources a task asks for and a node offers. Whole GPUs; CPUs in thousandths; bytes.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

namespace cohort {

struct Resources {
  int64_t gpus = 0;
  int64_t milli_cpus = 0;
  int64_t memory_bytes = 0;

  Resources& operator+=(const Resources& o) {
    gpus += o.gpus;
    milli_cpus += o.milli_cpus;
    memory_bytes += o.memory_bytes;
    return *this;
  }
  Resources& operator-=(const Resources& o) {
    gpus -= o.gpus;
    milli_cpus -= o.milli_cpus;
    memory_bytes -= o.memory_bytes;
    return *this;
  }
  friend Resources operator+(Resources a, const Resources& b) { return a += b; }
  friend Resources operator-(Resources a, const Resources& b) { return a -= b; }
  friend Resources operator*(Resources a, int64_t n) {
    a.gpus *= n;
    a.milli_cpus *= n;
    a.memory_bytes *= n;
    return a;
  }
  bool operator==(const Resources&) const = default;
  auto operator<=>(const Resources&) const = default;

  // True if every dimension of this fits into `available`.
  bool FitsIn(const Resources& available) const {
    return gpus <= available.gpus && milli_cpus <= available.milli_cpus &&
           memory_bytes <= available.memory_bytes;
  }
  // "4 GPUs, 8 CPUs, 32Gi"
  std::string ToString() const;
};

}  // namespace cohort
