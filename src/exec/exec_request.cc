#include "exec/exec_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/strings.h"

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
  Json doc{{"credential", request.credential}, {"command", request.command}};
  if (!request.env.empty()) doc["env"] = request.env;
  if (!request.cwd.empty()) doc["cwd"] = request.cwd;
  if (request.gpus) doc["gpus"] = {{"index", request.gpus->index}, {"count", request.gpus->count}};
  if (request.stream) doc["stream"] = true;
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

namespace {

bool IsVariableName(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

Status ReadExtras(const Json& doc, ExecRequest& request) {
  if (auto it = doc.find("env"); it != doc.end()) {
    if (!it->is_object()) return Status::InvalidArgument("request: env: must be an object");
    if (it->size() > kMaxRequestVariables) {
      return Status::InvalidArgument(
          fmt::format("request: env: at most {} variables", kMaxRequestVariables));
    }
    for (const auto& [name, value] : it->items()) {
      if (!IsVariableName(name) || !value.is_string()) {
        return Status::InvalidArgument(fmt::format(
            "request: env.{}: must be a variable name with a string value", name.substr(0, 64)));
      }
      std::string text = value.get<std::string>();
      if (text.find('\0') != std::string::npos) {
        return Status::InvalidArgument(fmt::format("request: env.{}: holds a NUL", name));
      }
      request.env[name] = std::move(text);
    }
  }
  if (auto it = doc.find("cwd"); it != doc.end()) {
    if (!it->is_string() || it->get<std::string>().find('\0') != std::string::npos) {
      return Status::InvalidArgument("request: cwd: must be a path");
    }
    request.cwd = it->get<std::string>();
  }
  if (auto it = doc.find("gpus"); it != doc.end()) {
    auto index = it->is_object() ? it->find("index") : it->end();
    auto count = it->is_object() ? it->find("count") : it->end();
    if (!it->is_object() || index == it->end() || count == it->end() ||
        !index->is_number_integer() || !count->is_number_integer() || *index < 0 || *index > 1024 ||
        *count < 1 || *count > 64) {
      return Status::InvalidArgument(
          "request: gpus: must be {\"index\": 0 to 1024, \"count\": 1 to 64}");
    }
    request.gpus = GpuSlice{index->get<int>(), count->get<int>()};
  }
  if (auto it = doc.find("stream"); it != doc.end()) {
    if (!it->is_boolean()) return Status::InvalidArgument("request: stream: must be true or false");
    request.stream = it->get<bool>();
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ExecRequest> DecodeRequest(std::string_view line) {
  COHORT_ASSIGN_OR_RETURN(Json doc, ParseObject(line, "request"));
  for (const auto& [key, value] : doc.items()) {
    if (key != "credential" && key != "command" && key != "env" && key != "cwd" && key != "gpus" &&
        key != "stream") {
      return Status::InvalidArgument(fmt::format(
          "request: {}: unknown field; expected credential, command, env, cwd, gpus or stream",
          key.substr(0, 64)));
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
  COHORT_RETURN_IF_ERROR(ReadExtras(doc, request));
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

std::string EncodeFrame(std::string_view kind, std::string_view payload) {
  std::string frame = fmt::format("{} {}\n", kind, payload.size());
  frame.append(payload);
  return frame;
}

StatusOr<std::string> SliceGpus(std::string_view visible, const GpuSlice& slice) {
  std::vector<std::string> gpus;
  for (const std::string& g : Split(visible, ',')) {
    if (!g.empty()) gpus.push_back(g);
  }
  size_t first = static_cast<size_t>(slice.index) * static_cast<size_t>(slice.count);
  if (first + static_cast<size_t>(slice.count) > gpus.size()) {
    return Status::InvalidArgument(
        fmt::format("this task has {} GPU{} ({}); GPUs {} to {} of it are not there", gpus.size(),
                    gpus.size() == 1 ? "" : "s", visible.empty() ? "none" : std::string(visible),
                    first, first + static_cast<size_t>(slice.count) - 1));
  }
  std::vector<std::string> mine(gpus.begin() + static_cast<std::ptrdiff_t>(first),
                                gpus.begin() + static_cast<std::ptrdiff_t>(first + slice.count));
  return Join(mine, ",");
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

std::string EncodeSignal(int number) { return fmt::format("signal {}\n", number); }

std::optional<int> DecodeSignal(std::string_view line) {
  constexpr std::string_view kPrefix = "signal ";
  if (!line.starts_with(kPrefix)) return std::nullopt;
  line.remove_prefix(kPrefix.size());
  if (line.empty() || line.size() > 2) return std::nullopt;
  int number = 0;
  for (char c : line) {
    if (c < '0' || c > '9') return std::nullopt;
    number = number * 10 + (c - '0');
  }
  if (number < 1 || number > 64) return std::nullopt;
  return number;
}

}  // namespace cohort::exec
