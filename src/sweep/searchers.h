// The searchers behind MakeSearcher (sweep/searcher.h), a file each, and what they share: the
// values of random trials, and reading a saved state.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/json.h"
#include "sweep/random_stream.h"
#include "sweep/searcher.h"
#include "sweep/sweep_spec.h"

namespace cohort::sweep {

StatusOr<std::unique_ptr<Searcher>> MakeGridSearcher(const SweepSpec& spec, const Json* state);
StatusOr<std::unique_ptr<Searcher>> MakeRandomSearcher(const SweepSpec& spec, const Json* state);
StatusOr<std::unique_ptr<Searcher>> MakeAshaSearcher(const SweepSpec& spec, const Json* state);

// Trials whose values are drawn from the space, each leaf in name order, up to max_trials.
class RandomTrials {
 public:
  RandomTrials(const SweepSpec& spec, uint64_t draws, int made);
  std::optional<Json> Next();
  int made() const { return made_; }
  // {"trials_made", "seed", "draws"}, into `state`.
  void Save(Json* state) const;
  // The same from a state that fits `spec`.
  static StatusOr<RandomTrials> Restore(const SweepSpec& spec, const Json& state);

 private:
  std::vector<HyperParameter> space_;
  int max_trials_;
  RandomStream stream_;
  int made_;
};

// The common part of every state: {"searcher": "<name>", "trials_made": N}, with N checked
// against max_trials. kInvalidArgument naming the field otherwise.
StatusOr<int> TrialsMadeIn(const SweepSpec& spec, const Json& state);
// "searcher state: <reason>".
Status BadState(std::string_view reason);

}  // namespace cohort::sweep
