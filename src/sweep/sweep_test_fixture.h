// The sweep spec the sweep module's tests start from: the one in docs/sweeps.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "sweep/sweep_spec.h"

namespace cohort::sweep {

inline constexpr std::string_view kDigitsYaml = R"(name: digits
team: research
trial:
  framework: pytorch
  tasks:
    - role: worker
      resources: {gpus: 1, cpus: 1, memory: 2Gi}
      command: [/usr/bin/python3, train.py, --lr, "${hp.lr}", --hidden, "${hp.model.hidden}"]
      env: {OPTIMIZER: "${hp.optimizer}"}
      workdir: runs/${hp.optimizer}
  restart: {on: [preempted]}
hyperparameters:
  lr: {type: log, minval: -4, maxval: -1, base: 10, count: 4}
  batch_size: {type: int, minval: 16, maxval: 128, count: 3}
  dropout: {type: double, minval: 0.0, maxval: 0.5}
  optimizer: {type: categorical, vals: [sgd, adam]}
  epochs: 27
  model:
    hidden: {type: int, minval: 32, maxval: 256}
searcher:
  name: asha
  metric: val_acc
  mode: max
  max_trials: 16
  max_concurrent_trials: 4
  seed: 7
  time_metric: epoch
  max_time: 27
  divisor: 3
  max_rungs: 4
)";

// The spec parsed; fails the test if it does not parse.
inline SweepSpec ParseOrDie(std::string_view yaml) {
  auto spec = ParseSweepSpec(yaml);
  EXPECT_TRUE(spec.ok()) << spec.status().message() << ": "
                         << ::testing::PrintToString(spec.status().details());
  return spec.ok() ? *spec : SweepSpec{};
}

// The errors of a spec that must not parse.
inline std::vector<std::string> ErrorsOf(std::string_view yaml) {
  auto spec = ParseSweepSpec(yaml);
  EXPECT_FALSE(spec.ok());
  if (spec.ok()) return {};
  return spec.status().details();
}

// `yaml` with the first `from` replaced by `to`.
inline std::string Replace(std::string_view yaml, std::string_view from, std::string_view to) {
  std::string out(yaml);
  size_t at = out.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) out.replace(at, from.size(), to);
  return out;
}

}  // namespace cohort::sweep
