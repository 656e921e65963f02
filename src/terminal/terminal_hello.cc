#include "terminal/terminal_hello.h"

#include <nlohmann/json.hpp>

namespace cohort::terminal {

bool ValidTerm(std::string_view term) {
  if (term.empty() || term.size() > kMaxTermLength) return false;
  for (char c : term) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '+' || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::string EncodeHello(const Hello& hello) {
  return nlohmann::json{{"credential", hello.credential},
                        {"user", hello.user},
                        {"term", hello.term},
                        {"size", FormatWindowSize(hello.size)}}
      .dump();
}

std::optional<Hello> ParseHello(std::string_view payload, std::string* error) {
  auto doc = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
  auto text = [&](const char* key) -> const std::string* {
    if (!doc.is_object()) return nullptr;
    auto it = doc.find(key);
    return it != doc.end() && it->is_string() ? &it->get_ref<const std::string&>() : nullptr;
  };
  const std::string* credential = text("credential");
  const std::string* user = text("user");
  const std::string* term = text("term");
  const std::string* size = text("size");
  if (!credential || !user || !term || !size) {
    *error = "the hello is not JSON with credential, user, term and size";
    return std::nullopt;
  }
  auto window = ParseWindowSize(*size);
  if (!window) {
    *error = "the hello's size is not \"COLS ROWS\"";
    return std::nullopt;
  }
  if (!term->empty() && !ValidTerm(*term)) {
    *error = "the hello's term is not a terminal type";
    return std::nullopt;
  }
  return Hello{*credential, *user, *term, *window};
}

}  // namespace cohort::terminal
