#include "model/json_errors.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string_view>

namespace cohort {

std::string DescribeJsonValue(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return fmt::format("a number ({})", value.dump());
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::array:
      return "a list";
    case nlohmann::json::value_t::object:
      return "an object";
    default:
      return "binary data";
  }
}

std::string JsonErrorText(const std::exception& error) {
  std::string_view text = error.what();
  if (dynamic_cast<const nlohmann::json::exception*>(&error) == nullptr) return std::string(text);
  // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..."
  if (text.starts_with("[json.exception.")) {
    size_t end = text.find("] ");
    if (end != std::string_view::npos) text.remove_prefix(end + 2);
  }
  return std::string(text);
}

}  // namespace cohort
