#include "sim/sweep_rows.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <random>

#include "common/strings.h"
#include "sim/team_split.h"

namespace cohort::sim {
namespace {

// The sweep spec's bounds (docs/sweeps.md), and a bound on the replay's trials.
constexpr int kMaxTrials = 100'000;
constexpr int kMaxRungs = 10;
constexpr int kMaxDivisor = 100;

Status Bad(std::string_view key, std::string_view why) {
  return Status::InvalidArgument(fmt::format("sweep: {} {}", key, why));
}

std::optional<double> Fraction(std::string_view text) {
  text = Trim(text);
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  if (!(v >= 0 && v <= 1)) return std::nullopt;  // NaN too
  return v;
}

}  // namespace

StatusOr<SweepShape> ParseSweepShape(std::string_view text) {
  SweepShape shape;
  std::string stop_text;
  bool has_trials = false;
  for (const std::string& item : Split(text, ';')) {
    std::string_view kv = Trim(item);
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) return Bad(kv, "is not key=value");
    std::string_view key = Trim(kv.substr(0, eq));
    std::string_view value = Trim(kv.substr(eq + 1));
    if (key == "stop") {
      stop_text = std::string(value);
      continue;
    }
    int* field = key == "trials"        ? &shape.trials
                 : key == "concurrency" ? &shape.concurrency
                 : key == "divisor"     ? &shape.divisor
                 : key == "rungs"       ? &shape.rungs
                                        : nullptr;
    if (!field) {
      return Bad(key, "is not a sweep key; use trials, concurrency, divisor, rungs, stop");
    }
    auto v = ParseInt(value);
    if (!v) return Bad(key, fmt::format("must be an integer, not \"{}\"", value));
    *field = *v;
    has_trials |= key == "trials";
  }
  if (!has_trials) return Bad("trials", "is required");
  if (shape.trials < 1 || shape.trials > kMaxTrials) {
    return Bad("trials", fmt::format("must be 1 to {}", kMaxTrials));
  }
  if (shape.concurrency < 1) return Bad("concurrency", "must be at least 1");
  if (shape.rungs < 1 || shape.rungs > kMaxRungs) {
    return Bad("rungs", fmt::format("must be 1 to {}", kMaxRungs));
  }
  if (shape.divisor < 2 || shape.divisor > kMaxDivisor) {
    return Bad("divisor", fmt::format("must be 2 to {}", kMaxDivisor));
  }
  size_t below_last = static_cast<size_t>(shape.rungs - 1);
  if (stop_text.empty()) {
    shape.stop.assign(below_last, 1.0 - 1.0 / shape.divisor);
    return shape;
  }
  std::vector<double> stop;
  for (const std::string& f : Split(stop_text, '/')) {
    auto v = Fraction(f);
    if (!v) return Bad("stop", fmt::format("\"{}\" is not a fraction from 0 to 1", f));
    stop.push_back(*v);
  }
  if (stop.size() == 1) stop.assign(below_last, stop[0]);
  if (stop.size() != below_last) {
    return Bad("stop", fmt::format("needs one fraction, or one per rung but the last ({}), not {}",
                                   below_last, stop.size()));
  }
  shape.stop = std::move(stop);
  return shape;
}

std::string FormatSweepShape(const SweepShape& shape) {
  std::string out = fmt::format("trials={};concurrency={};divisor={};rungs={}", shape.trials,
                                shape.concurrency, shape.divisor, shape.rungs);
  bool one = std::all_of(shape.stop.begin(), shape.stop.end(),
                         [&](double f) { return f == shape.stop.front(); });
  if (one && !shape.stop.empty()) {
    out += fmt::format(";stop={}", shape.stop.front());
  } else if (!shape.stop.empty()) {
    out += fmt::format(";stop={}", fmt::join(shape.stop, "/"));
  }
  return out;
}

namespace {

// A trial's length when it stops at `rung`.
double RungLength(const SweepShape& shape, double full_length, int rung) {
  return full_length / std::pow(static_cast<double>(shape.divisor), shape.rungs - 1 - rung);
}

}  // namespace

double ExpectedTrialLength(const SweepShape& shape, double full_length) {
  double reaching = 1, expected = 0;
  for (int i = 0; i + 1 < shape.rungs; ++i) {
    double stop = shape.stop[static_cast<size_t>(i)];
    expected += reaching * stop * RungLength(shape, full_length, i);
    reaching *= 1 - stop;
  }
  return expected + reaching * full_length;
}

std::vector<TrialDraw> DrawTrials(const SweepShape& shape, double full_length,
                                  std::string_view sweep_id, uint64_t seed) {
  std::mt19937_64 rng(StableHash(sweep_id, seed));
  // A 53-bit uniform, not std::uniform_real_distribution, whose draws differ between standard
  // libraries.
  auto uniform = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  std::vector<TrialDraw> trials(static_cast<size_t>(shape.trials));
  int last = shape.rungs - 1;
  for (TrialDraw& t : trials) {
    t.rung = last;
    for (int i = 0; i < last; ++i) {
      if (uniform() < shape.stop[static_cast<size_t>(i)]) {
        t.rung = i;
        break;
      }
    }
    t.length = RungLength(shape, full_length, t.rung);
  }
  return trials;
}

}  // namespace cohort::sim
