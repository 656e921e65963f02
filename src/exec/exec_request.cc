#include "exec/exec_request.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace cohort::exec {
namespace {

using Json = nlohmann::json;

StatusOr<Json> ParseObject(std::string_view line, std::string_view what) {
  Json doc = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::InvalidArgument(fmt::format("the {} is not a JSON object", what));
  }
  return doc;
}

}  // namespace

int ExecAnswer::ExitStatus() const {
  if (exit_code) return *exit_code;
  if (signal) return 128 + *signal;
  return 255;
}

std::string EncodeRequest(const ExecRequest& request) {
  return Json{{"credential", request.credential}, {"command", request.command}}.dump() + "\n";
}

StatusOr<ExecRequest> DecodeRequest(std::string_view line) {
  COHORT_ASSIGN_OR_RETURN(Json doc, ParseObject(line, "request"));
  for (const auto& [key, value] : doc.items()) {
    if (key != "credential" && key != "command") {
      return Status::InvalidArgument(
          fmt::format("request: {}: unknown field; expected credential and command", key));
    }
  }
  ExecRequest request;
  for (auto [field, out] :
       {std::pair{"credential", &request.credential}, std::pair{"command", &request.command}}) {
    auto it = doc.find(field);
    if (it == doc.end() || !it->is_string()) {
      return Status::InvalidArgument(fmt::format("request: {}: must be a string", field));
    }
    *out = it->get<std::string>();
  }
  if (request.command.empty()) return Status::InvalidArgument("request: command: is empty");
  if (request.command.find('\0') != std::string::npos) {
    return Status::InvalidArgument("request: command: must not contain a NUL character");
  }
  return request;
}

std::string EncodeAnswer(const ExecAnswer& answer) {
  Json doc = Json::object();
  if (!answer.error.empty()) {
    doc["error"] = answer.error;
  } else if (answer.signal) {
    doc["signal"] = *answer.signal;
  } else {
    doc["exit_code"] = answer.exit_code.value_or(0);
  }
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

StatusOr<ExecAnswer> DecodeAnswer(std::string_view line) {
  COHORT_ASSIGN_OR_RETURN(Json doc, ParseObject(line, "answer"));
  ExecAnswer answer;
  auto integer = [&](const char* key) -> std::optional<int> {
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int>();
  };
  answer.exit_code = integer("exit_code");
  answer.signal = integer("signal");
  if (auto it = doc.find("error"); it != doc.end() && it->is_string()) {
    answer.error = it->get<std::string>();
  }
  if (!answer.exit_code && !answer.signal && answer.error.empty()) {
    return Status::InvalidArgument("the answer has no exit_code, signal or error");
  }
  return answer;
}

}  // namespace cohort::exec
