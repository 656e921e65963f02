#include "master/advisor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/units.h"

namespace cohort::master {
namespace {

double MeanBusy(const JobSample& s) {
  double sum = 0;
  for (double b : s.gpu_busy) sum += b;
  return sum / static_cast<double>(s.gpu_busy.size());
}

double MaxBusy(const JobSample& s) {
  return *std::max_element(s.gpu_busy.begin(), s.gpu_busy.end());
}

// CPUs as people read them: to half a core from one core up ("4 of 4 CPUs" at 3.9), to a tenth
// below ("0.3"), in milli-CPUs below a tenth ("50m"); a small request never reads as 0.
std::string Cores(double cores) {
  int64_t milli = std::llround(cores * 1000);
  if (milli >= 1000)
    milli = std::llround(cores * 2) * 500;
  else if (milli >= 100)
    milli = std::llround(cores * 10) * 100;
  return FormatMilliCpus(milli);
}

// Whether a sample's tasks read in many small calls.
bool SmallReads(const JobSample& s, const AdvisorConfig& config) {
  if (!s.reads || s.reads->tasks <= 0 || s.reads->calls_per_s <= 0) return false;
  return s.reads->calls_per_s >= config.small_reads_per_s * s.reads->tasks &&
         s.reads->bytes_per_s / s.reads->calls_per_s < config.small_read_bytes;
}

std::string PerCall(double bytes) {
  return bytes < 1024 ? fmt::format("{:.0f} bytes", bytes)
                      : fmt::format("{:.1f} KiB", bytes / 1024);
}

// 24000 -> "24,000".
std::string Thousands(double n) {
  std::string digits = fmt::format("{:.0f}", n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

void JobAdvisor::Observe(const JobSample& s) {
  // A sample without a GPU the advisor can see says nothing either way.
  if (s.gpu_busy.empty()) return;
  gpus_ = s.gpu_busy.size();
  if (MaxBusy(s) > config_.idle_below) {
    idle_since_.reset();
  } else if (!idle_since_) {
    idle_since_ = s.at;
  }
  ObserveReads(s);
  bool saturated = s.cpus_requested > 0 && s.cpus_used >= config_.cpu_saturated * s.cpus_requested;
  if (MeanBusy(s) > config_.gpu_starved_below || !saturated) {
    starved_since_.reset();
    busy_sum_ = used_sum_ = requested_sum_ = 0;
    starved_samples_ = 0;
    return;
  }
  if (!starved_since_) starved_since_ = s.at;
  busy_sum_ += MeanBusy(s);
  used_sum_ += s.cpus_used;
  requested_sum_ += s.cpus_requested;
  ++starved_samples_;
}

void JobAdvisor::ObserveReads(const JobSample& s) {
  if (MeanBusy(s) > config_.gpu_starved_below || !SmallReads(s, config_)) {
    small_reads_since_.reset();
    small_busy_sum_ = read_bytes_sum_ = read_calls_sum_ = 0;
    small_reads_samples_ = 0;
    return;
  }
  if (!small_reads_since_) small_reads_since_ = s.at;
  small_busy_sum_ += MeanBusy(s);
  read_bytes_sum_ += s.reads->bytes_per_s;
  read_calls_sum_ += s.reads->calls_per_s;
  ++small_reads_samples_;
}

std::vector<Advice> JobAdvisor::AdviceAt(Timestamp now) const {
  if (idle_since_ && now - *idle_since_ >= config_.idle_after) {
    return {Advice{AdviceKind::kIdle,
                   fmt::format("{} been idle for {}",
                               gpus_ == 1 ? "its GPU has" : fmt::format("its {} GPUs have", gpus_),
                               FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(
                                   now - *idle_since_))),
                   *idle_since_}};
  }
  if (small_reads_since_ && now - *small_reads_since_ >= config_.window) {
    const double n = small_reads_samples_;
    return {
        Advice{AdviceKind::kSmallReads,
               fmt::format("GPU {:.0f}% busy while its tasks read {} per read call ({} "
                           "calls/s): pack the small input files into large shards with "
                           "`cohort data pack` and read them with python/cohort_shards.py "
                           "(docs/data.md)",
                           100 * small_busy_sum_ / n, PerCall(read_bytes_sum_ / read_calls_sum_),
                           Thousands(read_calls_sum_ / n)),
               *small_reads_since_}};
  }
  if (starved_since_ && now - *starved_since_ >= config_.window) {
    const double n = starved_samples_;
    const double requested = requested_sum_ / n;
    return {Advice{AdviceKind::kStarved,
                   fmt::format("GPU {:.0f}% busy while {} of {} CPUs are saturated: ask for more "
                               "CPUs, or pack small input files into large shards",
                               100 * busy_sum_ / n, Cores(std::min(used_sum_ / n, requested)),
                               Cores(requested)),
                   *starved_since_}};
  }
  return {};
}

std::vector<Advice> Advise(const std::vector<JobSample>& samples, Timestamp now,
                           const AdvisorConfig& config) {
  JobAdvisor advisor(config);
  for (const auto& s : samples) advisor.Observe(s);
  return advisor.AdviceAt(now);
}

}  // namespace cohort::master
