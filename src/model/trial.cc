#include "model/trial.h"

#include <array>
#include <cctype>
#include <charconv>
#include <string>
#include <system_error>

namespace cohort {
namespace {

// The shortest text that reads back as the same double (std::to_chars), so that a trial's
// COHORT_HP_ variables, its command and its COHORT_HPARAMS file agree digit for digit.
std::string NumberText(double value) {
  std::array<char, 64> buffer{};
  auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  if (ec != std::errc()) return nlohmann::json(value).dump();
  return std::string(buffer.data(), end);
}

}  // namespace

std::string HParamText(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::string:
      return value.get<std::string>();
    case nlohmann::json::value_t::number_float:
      return NumberText(value.get<double>());
    default:  // integers, true/false, null; a list as its JSON text
      return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

namespace {

void Flatten(const nlohmann::json& value, const std::string& prefix,
             std::map<std::string, std::string>* out) {
  if (!value.is_object()) {
    (*out)[prefix] = HParamText(value);
    return;
  }
  for (const auto& [key, child] : value.items()) {
    Flatten(child, prefix.empty() ? key : prefix + "." + key, out);
  }
}

}  // namespace

std::string HParamEnvName(std::string_view dotted_name) {
  std::string name = "COHORT_HP_";
  for (char c : dotted_name) {
    name += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return name;
}

std::map<std::string, std::string> FlattenHParams(const nlohmann::json& hparams) {
  std::map<std::string, std::string> out;
  if (hparams.is_object()) Flatten(hparams, "", &out);
  return out;
}

std::map<std::string, std::string> TrialEnvironment(const TrialRef& trial) {
  std::map<std::string, std::string> env = {{"COHORT_SWEEP_ID", std::to_string(trial.sweep)},
                                            {"COHORT_TRIAL_ID", std::to_string(trial.trial)}};
  for (const auto& [name, text] : FlattenHParams(trial.hparams)) env[HParamEnvName(name)] = text;
  return env;
}

}  // namespace cohort
