// asha: random values, and asynchronous successive halving (docs/sweeps.md, "asha"). Rung i is
// at RungTimes()[i]; when a trial's time first reaches a rung, its value joins the rung, and the
// trial carries on iff its rank there so far (best first, counting itself) is below
// max(1, floor(n / divisor)), n the rung's values with its own; at the top rung it is complete.
// No rung waits for another trial: each decision is made with the values that have arrived.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <string>

#include "sweep/searchers.h"

namespace cohort::sweep {
namespace {

constexpr auto kVerdictNames = std::to_array<EnumName<Verdict>>({
    {Verdict::kContinue, "continue"},
    {Verdict::kStop, "stop"},
    {Verdict::kComplete, "complete"},
});

struct Entry {
  int trial = 0;
  double value = 0;
};

struct TrialState {
  double time = -INFINITY;  // the latest time seen
  int rungs = 0;            // rungs reached: the next is rung `rungs`
  Verdict verdict = Verdict::kContinue;
  bool ended = false;
};

// JSON has no NaN or infinity; a metric may be either.
Json ValueJson(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double ValueFrom(const Json& j) {
  if (j.is_number()) return j.get<double>();
  const std::string& s = j.get_ref<const std::string&>();
  if (s == "nan") return NAN;
  if (s == "inf") return INFINITY;
  if (s == "-inf") return -INFINITY;
  throw std::invalid_argument(fmt::format("{} is not a metric value", j.dump()));
}

class AshaSearcher final : public Searcher {
 public:
  AshaSearcher(const SweepSpec& spec, RandomTrials trials)
      : trials_(std::move(trials)),
        mode_(spec.searcher.mode),
        divisor_(spec.searcher.divisor),
        rung_times_(RungTimes(spec.searcher)),
        rungs_(rung_times_.size()) {}

  std::optional<Json> NextTrial() override { return trials_.Next(); }

  Verdict Observe(int trial, double time, double value) override {
    if (trial < 1 || trial > trials_.made()) return Verdict::kContinue;
    TrialState& t = trials_state_[trial];
    if (t.verdict != Verdict::kContinue || t.ended) return t.verdict;
    if (std::isnan(time) || time <= t.time) return Verdict::kContinue;
    t.time = time;
    const int top = static_cast<int>(rung_times_.size()) - 1;
    // One point may carry a trial past several rungs: it joins each in turn, and stops at the
    // first that does not promote it.
    while (t.rungs <= top && time >= rung_times_[t.rungs]) {
      const int rung = t.rungs++;
      rungs_[rung].push_back({trial, value});
      if (rung == top) {
        t.verdict = Verdict::kComplete;
      } else if (!Promoted(rung, value)) {
        t.verdict = Verdict::kStop;
      }
      if (t.verdict != Verdict::kContinue) break;
    }
    return t.verdict;
  }

  void TrialEnded(int trial) override {
    if (trial >= 1 && trial <= trials_.made()) trials_state_[trial].ended = true;
  }

  int trials_made() const override { return trials_.made(); }

  Json State() const override {
    Json state = {{"searcher", "asha"}};
    trials_.Save(&state);
    Json rungs = Json::array();
    for (const auto& rung : rungs_) {
      Json entries = Json::array();
      for (const Entry& e : rung) entries.push_back({e.trial, ValueJson(e.value)});
      rungs.push_back(std::move(entries));
    }
    state["rungs"] = std::move(rungs);
    Json trials = Json::array();
    for (const auto& [trial, t] : trials_state_) {
      trials.push_back({{"trial", trial},
                        {"time", ValueJson(t.time)},
                        {"rungs", t.rungs},
                        {"verdict", NameOf(kVerdictNames, t.verdict)},
                        {"ended", t.ended}});
    }
    state["trials"] = std::move(trials);
    return state;
  }

  // The rungs and trials of `state`, which must fit this searcher's spec; throws otherwise.
  void Restore(const Json& state) {
    const Json& rungs = state.at("rungs");
    if (!rungs.is_array() || rungs.size() != rungs_.size()) {
      throw std::invalid_argument(fmt::format("rungs must be a list of {}", rungs_.size()));
    }
    for (size_t r = 0; r < rungs_.size(); ++r) {
      for (const Json& e : rungs[r]) {
        int trial = e.at(0).get<int>();
        CheckTrial(trial);
        rungs_[r].push_back({trial, ValueFrom(e.at(1))});
      }
    }
    for (const Json& j : state.at("trials")) {
      int trial = j.at("trial").get<int>();
      CheckTrial(trial);
      TrialState t;
      t.time = ValueFrom(j.at("time"));
      t.rungs = j.at("rungs").get<int>();
      if (t.rungs < 0 || t.rungs > static_cast<int>(rungs_.size())) {
        throw std::invalid_argument(fmt::format("trial {} has reached {} rungs", trial, t.rungs));
      }
      auto verdict = Parse(kVerdictNames, j.at("verdict").get<std::string>());
      if (!verdict) throw std::invalid_argument(fmt::format("trial {}'s verdict", trial));
      t.verdict = *verdict;
      t.ended = j.at("ended").get<bool>();
      trials_state_[trial] = t;
    }
  }

 private:
  void CheckTrial(int trial) const {
    if (trial < 1 || trial > trials_.made()) {
      throw std::invalid_argument(fmt::format("trial {} was not made", trial));
    }
  }

  // Whether a is better than b; NaN is worse than any number.
  bool Better(double a, double b) const {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
    return mode_ == MetricMode::kMax ? a > b : a < b;
  }

  bool Promoted(int rung, double value) const {
    const auto& entries = rungs_[rung];
    const auto n = static_cast<int64_t>(entries.size());
    int64_t rank = 0;  // values strictly better than this one: ties share the better rank
    for (const Entry& e : entries) rank += Better(e.value, value) ? 1 : 0;
    return rank < std::max<int64_t>(1, n / divisor_);
  }

  RandomTrials trials_;
  MetricMode mode_;
  int divisor_;
  std::vector<double> rung_times_;
  std::vector<std::vector<Entry>> rungs_;  // each in arrival order
  std::map<int, TrialState> trials_state_;
};

}  // namespace

StatusOr<std::unique_ptr<Searcher>> MakeAshaSearcher(const SweepSpec& spec, const Json* state) {
  if (spec.searcher.max_rungs < 1 || spec.searcher.divisor < 2 || !(spec.searcher.max_time > 0)) {
    return Status::InvalidArgument(
        "asha needs max_time above 0, divisor 2 or more, max_rungs 1 or more");
  }
  if (state == nullptr) {
    return std::unique_ptr<Searcher>(new AshaSearcher(spec, RandomTrials(spec, 0, 0)));
  }
  auto trials = RandomTrials::Restore(spec, *state);
  if (!trials.ok()) return trials.status();
  auto searcher = std::make_unique<AshaSearcher>(spec, std::move(*trials));
  searcher->Restore(*state);  // MakeSearcher turns a throw into kInvalidArgument
  return std::unique_ptr<Searcher>(std::move(searcher));
}

}  // namespace cohort::sweep
