// How long the master's event loop is held by parsing and validating one job spec, for specs up
// to the largest it takes (kMaxYamlSpecBytes, kMaxSpecBytes): the limits are chosen so that
// this stays within a few milliseconds. Prints a table; docs/performance.md records this
// machine's figures.
//
//   build/bin/spec_bench [--runs 20]
#include <fmt/format.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "model/job_spec_parser.h"
#include "model/json.h"
#include "model/limits.h"

namespace {

using cohort::kMaxSpecBytes;

// A valid spec of about `bytes` in YAML block style: long arguments, then long variables.
std::string LargeValidYaml(size_t bytes) {
  std::string text = "name: big\ntasks:\n  - role: worker\n    replicas: 8\n    command:\n";
  const std::string arg(100, 'a');
  for (size_t i = 0; i < cohort::kMaxCommandArgs && text.size() < bytes / 2; ++i) {
    text += fmt::format("      - --flag-{}={}\n", i, arg);
  }
  text += "    env:\n";
  const std::string value(500, 'v');
  for (size_t i = 0; i < cohort::kMaxEnvVars && text.size() + 530 < bytes; ++i) {
    text += fmt::format("      VAR_{}: \"{}\"\n", i, value);
  }
  return text;
}

// The worst case for the YAML parser: the most nodes per byte (a flow list of one-letter
// items); refused for its length, but only once it has been parsed.
std::string TinyTokensYaml(size_t bytes) {
  std::string text = "name: tiny\ntasks: [{role: w, command: [";
  while (text.size() + 8 < bytes) text += "a, ";
  return text + "a]}]\n";
}

// A valid spec of about `bytes` in JSON, as `cohort submit` sends it.
std::string LargeValidJson(size_t bytes) {
  cohort::Json command = cohort::Json::array();
  const std::string arg(100, 'a');
  for (size_t i = 0; i < cohort::kMaxCommandArgs && command.dump().size() < bytes / 2; i += 64) {
    for (size_t k = i; k < i + 64 && k < cohort::kMaxCommandArgs; ++k) {
      command.push_back(fmt::format("--flag-{}={}", k, arg));
    }
  }
  cohort::Json env = cohort::Json::object();
  const std::string value(500, 'v');
  cohort::Json doc = {{"name", "big"},
                      {"tasks", {{{"role", "worker"}, {"replicas", 8}, {"command", command}}}}};
  for (size_t i = 0; i < cohort::kMaxEnvVars && doc.dump().size() + 530 < bytes; ++i) {
    env[fmt::format("VAR_{}", i)] = value;
    if (i % 16 == 0) doc["tasks"][0]["env"] = env;
  }
  doc["tasks"][0]["env"] = env;
  return doc.dump();
}

// The JSON counterpart of TinyTokensYaml.
std::string TinyTokensJson(size_t bytes) {
  std::string text = R"({"name": "tiny", "tasks": [{"role": "w", "command": [)";
  while (text.size() + 12 < bytes) text += R"("a",)";
  return text + R"("a"]}]})";
}

// This thread's CPU time: on a busy machine the wall clock also counts other processes' turns.
double CpuMs() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

struct Timing {
  double median_cpu_ms;
  double max_cpu_ms;
  double median_wall_ms;
  bool accepted;
};

Timing Measure(const std::string& text, int runs) {
  std::vector<double> cpu, wall;
  bool accepted = false;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    double cpu_start = CpuMs();
    auto spec = cohort::ParseJobSpec(text);
    cpu.push_back(CpuMs() - cpu_start);
    wall.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    accepted = spec.ok();
  }
  std::sort(cpu.begin(), cpu.end());
  std::sort(wall.begin(), wall.end());
  return Timing{cpu[cpu.size() / 2], cpu.back(), wall[wall.size() / 2], accepted};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Time ParseJobSpec on large specs");
  int runs = 20;
  app.add_option("--runs", runs, "Parses per spec")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  fmt::print("{:<14} {:>8} {:>14} {:>11} {:>15} {:>9}\n", "spec", "bytes", "median cpu ms",
             "max cpu ms", "median wall ms", "accepted");
  // Each form up to the most the master takes of it.
  const auto yaml_max = static_cast<size_t>(cohort::kMaxYamlSpecBytes);
  const auto json_max = static_cast<size_t>(kMaxSpecBytes);
  struct Form {
    const char* name;
    std::string (*make)(size_t);
    std::vector<size_t> sizes;
  };
  for (const Form& form : {Form{"yaml, valid", &LargeValidYaml, {yaml_max / 4, yaml_max}},
                           Form{"yaml, tokens", &TinyTokensYaml, {yaml_max / 4, yaml_max}},
                           Form{"json, valid", &LargeValidJson, {json_max / 4, json_max}},
                           Form{"json, tokens", &TinyTokensJson, {json_max / 4, json_max}}}) {
    for (size_t size : form.sizes) {
      std::string text = form.make(size);
      Timing t = Measure(text, runs);
      fmt::print("{:<14} {:>8} {:>14.2f} {:>11.2f} {:>15.2f} {:>9}\n", form.name, text.size(),
                 t.median_cpu_ms, t.max_cpu_ms, t.median_wall_ms, t.accepted ? "yes" : "no");
    }
  }
  return 0;
}
