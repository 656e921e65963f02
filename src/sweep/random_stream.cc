#include "sweep/random_stream.h"

#include <limits>

namespace cohort::sweep {

RandomStream::RandomStream(uint64_t seed, uint64_t draws) : seed_(seed), engine_(seed) {
  engine_.discard(draws);
  draws_ = draws;
}

uint64_t RandomStream::Next() {
  ++draws_;
  return engine_();
}

double RandomStream::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

uint64_t RandomStream::Below(uint64_t n) {
  if (n <= 1) return 0;
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  const uint64_t limit = max - (max % n + 1) % n;  // [0, limit] is a whole number of n's
  uint64_t x = Next();
  while (x > limit) x = Next();
  return x % n;
}

}  // namespace cohort::sweep
