#include "sweep/searcher.h"

#include <fmt/format.h>

#include "model/json_errors.h"
#include "sweep/searchers.h"

namespace cohort::sweep {

Status BadState(std::string_view reason) {
  return Status::InvalidArgument(fmt::format("searcher state: {}", reason));
}

StatusOr<int> TrialsMadeIn(const SweepSpec& spec, const Json& state) {
  if (!state.is_object()) return BadState("must be an object");
  auto name = state.find("searcher");
  const char* want = NameOf(kSearcherNames, spec.searcher.name);
  if (name == state.end() || !name->is_string() || name->get<std::string>() != want) {
    return BadState(fmt::format("is not a {} searcher's", want));
  }
  auto made = state.find("trials_made");
  if (made == state.end() || !made->is_number_integer() || made->get<int64_t>() < 0 ||
      made->get<int64_t>() > spec.searcher.max_trials) {
    return BadState(
        fmt::format("trials_made must be an integer from 0 to {}", spec.searcher.max_trials));
  }
  return static_cast<int>(made->get<int64_t>());
}

StatusOr<std::unique_ptr<Searcher>> MakeSearcher(const SweepSpec& spec, const Json* state) {
  try {
    switch (spec.searcher.name) {
      case SearcherName::kGrid:
        return MakeGridSearcher(spec, state);
      case SearcherName::kRandom:
        return MakeRandomSearcher(spec, state);
      case SearcherName::kAsha:
        return MakeAshaSearcher(spec, state);
    }
  } catch (const std::exception& e) {
    return BadState(JsonErrorText(e));
  }
  return Status::InvalidArgument("unknown searcher");
}

std::vector<Json> PreviewTrials(const SweepSpec& spec, int n) {
  std::vector<Json> trials;
  auto searcher = MakeSearcher(spec);
  if (!searcher.ok()) return trials;
  for (int i = 0; i < n; ++i) {
    std::optional<Json> next = (*searcher)->NextTrial();
    if (!next) break;
    trials.push_back(std::move(*next));
  }
  return trials;
}

std::vector<double> RungTimes(const SearcherSpec& searcher) {
  std::vector<double> times(static_cast<size_t>(std::max(searcher.max_rungs, 0)));
  // Exact while divisor^k is: integers below 2^53 (100^9 = 10^18 = 2^18 * 5^18 still is).
  double factor = 1;
  for (size_t k = times.size(); k-- > 0;) {
    times[k] = searcher.max_time / factor;
    factor *= searcher.divisor;
  }
  return times;
}

}  // namespace cohort::sweep
