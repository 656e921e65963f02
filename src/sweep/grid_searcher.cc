// grid: every point of the Cartesian product of the axes (sweep/hparam_space.h, GridAxis), the
// first name's axis outermost, each point once.
#include <fmt/format.h>

#include "sweep/hparam_space.h"
#include "sweep/searchers.h"
#include "sweep/sweep_limits.h"

namespace cohort::sweep {
namespace {

class GridSearcher final : public Searcher {
 public:
  GridSearcher(const SweepSpec& spec, std::vector<std::vector<Json>> axes, int made)
      : spec_(spec), axes_(std::move(axes)), made_(made) {}

  std::optional<Json> NextTrial() override {
    if (made_ >= spec_.searcher.max_trials || made_ >= GridPoints()) return std::nullopt;
    int64_t index = made_++;
    Json values = Json::object();
    for (size_t i = axes_.size(); i-- > 0;) {
      const auto n = static_cast<int64_t>(axes_[i].size());
      SetDotted(&values, spec_.hyperparameters[i].name, axes_[i][index % n]);
      index /= n;
    }
    return values;
  }
  Verdict Observe(int, double, double) override { return Verdict::kContinue; }
  void TrialEnded(int) override {}
  int trials_made() const override { return made_; }
  Json State() const override { return {{"searcher", "grid"}, {"trials_made", made_}}; }

 private:
  int64_t GridPoints() const {
    int64_t n = 1;
    for (const auto& axis : axes_) n *= static_cast<int64_t>(axis.size());
    return n;
  }

  SweepSpec spec_;
  std::vector<std::vector<Json>> axes_;
  int made_;
};

}  // namespace

StatusOr<std::unique_ptr<Searcher>> MakeGridSearcher(const SweepSpec& spec, const Json* state) {
  std::vector<std::vector<Json>> axes;
  for (const HyperParameter& hp : spec.hyperparameters) {
    axes.push_back(GridAxis(hp));
    if (axes.back().empty()) {
      return Status::InvalidArgument(fmt::format(
          "hyperparameters.{}.count: the grid searcher needs the count of every range", hp.name));
    }
  }
  if (GridSize(spec) > kMaxGridSize) {
    return Status::InvalidArgument(fmt::format("the grid has more than {} points", kMaxGridSize));
  }
  int made = 0;
  if (state != nullptr) {
    auto restored = TrialsMadeIn(spec, *state);
    if (!restored.ok()) return restored.status();
    made = *restored;
  }
  return std::unique_ptr<Searcher>(new GridSearcher(spec, std::move(axes), made));
}

}  // namespace cohort::sweep
