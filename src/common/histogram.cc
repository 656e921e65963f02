#include "common/histogram.h"

#include <algorithm>

namespace cohort {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), in_bucket_(bounds_.size(), 0) {}

void Histogram::Observe(Duration took) { ObserveSeconds(static_cast<double>(took.count()) / 1e6); }

void Histogram::ObserveSeconds(double seconds) {
  seconds = std::max(seconds, 0.0);
  auto bucket = std::lower_bound(bounds_.begin(), bounds_.end(), seconds);
  if (bucket != bounds_.end()) ++in_bucket_[static_cast<size_t>(bucket - bounds_.begin())];
  ++count_;
  sum_ += seconds;
}

std::vector<uint64_t> Histogram::CumulativeCounts() const {
  std::vector<uint64_t> out(in_bucket_.size());
  uint64_t total = 0;
  for (size_t i = 0; i < in_bucket_.size(); ++i) out[i] = total += in_bucket_[i];
  return out;
}

}  // namespace cohort
