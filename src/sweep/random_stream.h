// The searchers' only source of randomness: std::mt19937_64 from a seed, used through its raw
// 64-bit output with transforms of our own (the standard distributions differ between library
// versions; the engine's output does not). It counts its draws, so a stream is saved as
// (seed, draws) and restored by discarding as many.
#pragma once

#include <cstdint>
#include <random>

namespace cohort::sweep {

class RandomStream {
 public:
  explicit RandomStream(uint64_t seed, uint64_t draws = 0);

  uint64_t Next();
  // Uniform in [0, 1): the top 53 bits.
  double Uniform();
  // Uniform in [0, n) for n >= 1, without modulo bias (draws again below the largest multiple
  // of n).
  uint64_t Below(uint64_t n);

  uint64_t seed() const { return seed_; }
  uint64_t draws() const { return draws_; }

 private:
  uint64_t seed_;
  uint64_t draws_ = 0;
  std::mt19937_64 engine_;
};

}  // namespace cohort::sweep
