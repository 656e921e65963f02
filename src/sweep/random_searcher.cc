// random: each trial's values drawn from the space (sweep/hparam_space.h, Draw), each leaf in
// name order from one seeded stream; every trial runs to its own end.
#include <fmt/format.h>

#include "sweep/hparam_space.h"
#include "sweep/searchers.h"

namespace cohort::sweep {

RandomTrials::RandomTrials(const SweepSpec& spec, uint64_t draws, int made)
    : space_(spec.hyperparameters),
      max_trials_(spec.searcher.max_trials),
      stream_(spec.searcher.seed, draws),
      made_(made) {}

std::optional<Json> RandomTrials::Next() {
  if (made_ >= max_trials_) return std::nullopt;
  ++made_;
  Json values = Json::object();
  for (const HyperParameter& hp : space_) SetDotted(&values, hp.name, Draw(hp, &stream_));
  return values;
}

void RandomTrials::Save(Json* state) const {
  (*state)["trials_made"] = made_;
  (*state)["seed"] = stream_.seed();
  (*state)["draws"] = stream_.draws();
}

StatusOr<RandomTrials> RandomTrials::Restore(const SweepSpec& spec, const Json& state) {
  auto made = TrialsMadeIn(spec, state);
  if (!made.ok()) return made.status();
  auto seed = state.find("seed");
  if (seed == state.end() || !seed->is_number_unsigned() ||
      seed->get<uint64_t>() != spec.searcher.seed) {
    return BadState(fmt::format("seed must be the spec's, {}", spec.searcher.seed));
  }
  auto draws = state.find("draws");
  // A leaf takes one draw, or a few more when an integer draw is redrawn (each time with a
  // chance below 1/2): far below 64 for each. The bound keeps a broken state from making the
  // restore discard without end.
  const uint64_t most = (static_cast<uint64_t>(*made) * spec.hyperparameters.size() + 1) * 64;
  if (draws == state.end() || !draws->is_number_unsigned() || draws->get<uint64_t>() > most) {
    return BadState(fmt::format("draws must be a count of draws, at most {}", most));
  }
  return RandomTrials(spec, draws->get<uint64_t>(), *made);
}

namespace {

class RandomSearcher final : public Searcher {
 public:
  explicit RandomSearcher(RandomTrials trials) : trials_(std::move(trials)) {}

  std::optional<Json> NextTrial() override { return trials_.Next(); }
  Verdict Observe(int, double, double) override { return Verdict::kContinue; }
  void TrialEnded(int) override {}
  int trials_made() const override { return trials_.made(); }
  Json State() const override {
    Json state = {{"searcher", "random"}};
    trials_.Save(&state);
    return state;
  }

 private:
  RandomTrials trials_;
};

}  // namespace

StatusOr<std::unique_ptr<Searcher>> MakeRandomSearcher(const SweepSpec& spec, const Json* state) {
  if (state == nullptr)
    return std::unique_ptr<Searcher>(new RandomSearcher(RandomTrials(spec, 0, 0)));
  auto trials = RandomTrials::Restore(spec, *state);
  if (!trials.ok()) return trials.status();
  return std::unique_ptr<Searcher>(new RandomSearcher(std::move(*trials)));
}

}  // namespace cohort::sweep
