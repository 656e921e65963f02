#include "model/spec_document.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/units.h"
#include "model/json_errors.h"
#include "model/limits.h"
#include "model/spec_fields.h"

namespace cohort {
namespace {

// Guards against documents that expand without bound through YAML aliases.
constexpr int kMaxDepth = 64;
constexpr size_t kMaxNodes = 100'000;

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr std::array<uint32_t, 4> kMin = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// YAML to JSON.

struct DocumentTooComplex {};

bool AllDigits(std::string_view s, bool (*ok)(char)) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), ok);
}

// The YAML 1.2 core schema for an untagged plain scalar.
Json ResolvePlainScalar(const std::string& s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;

  auto is_dec = [](char c) { return c >= '0' && c <= '9'; };
  auto is_hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  auto is_oct = [](char c) { return c >= '0' && c <= '7'; };
  std::string_view body = s;
  bool negative = false;
  if (body[0] == '+' || body[0] == '-') {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  int base = 0;
  if (AllDigits(body, is_dec)) {
    base = 10;
  } else if (s.size() > 2 && s[0] == '0' && s[1] == 'x' && AllDigits(s.substr(2), is_hex)) {
    base = 16;
    body = std::string_view(s).substr(2);
  } else if (s.size() > 2 && s[0] == '0' && s[1] == 'o' && AllDigits(s.substr(2), is_oct)) {
    base = 8;
    body = std::string_view(s).substr(2);
  }
  if (base != 0) {
    uint64_t magnitude = 0;
    auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), magnitude, base);
    if (ec == std::errc() && end == body.data() + body.size()) {
      if (!negative) {
        if (magnitude <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return static_cast<int64_t>(magnitude);
        }
        return magnitude;
      }
      if (magnitude <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return -static_cast<int64_t>(magnitude);
      }
    }
    return s;  // too large to be a number: keep the text
  }

  // [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
  size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && is_dec(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_dec(s[i])) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return s;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && is_dec(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return s;
  }
  if (i != s.size()) return s;
  std::string_view text = s;
  if (text[0] == '+') text.remove_prefix(1);
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return s;
  return value;
}

// Converts a YAML tree to JSON, reporting what JSON cannot say or what a spec must not
// contain (duplicate keys, keys that are not scalars) into `errors`.
class YamlConverter {
 public:
  YamlConverter(std::string_view kind, std::vector<std::string>* errors)
      : kind_(kind), errors_(errors) {}

  Json Convert(const YAML::Node& node, const std::string& path, int depth) {
    if (depth > kMaxDepth || ++nodes_ > kMaxNodes) throw DocumentTooComplex{};
    CheckTag(node, path);
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return nullptr;
      case YAML::NodeType::Scalar:
        return Scalar(node, path);
      case YAML::NodeType::Sequence: {
        Json out = Json::array();
        size_t i = 0;
        for (const auto& item : node) out.push_back(Convert(item, IndexPath(path, i++), depth + 1));
        return out;
      }
      case YAML::NodeType::Map: {
        Json out = Json::object();
        std::map<std::string, int> first_line;
        for (const auto& kv : node) {
          const YAML::Node& key = kv.first;
          if (!key.IsScalar()) {
            Error(path, key.IsNull() ? "a key is empty"
                                     : fmt::format("keys must be names, got {}",
                                                   key.IsMap() ? "a mapping" : "a list"));
            continue;
          }
          const std::string& name = key.Scalar();
          if (!IsValidUtf8(name)) {
            Error(path, "a key is not valid UTF-8");
            continue;
          }
          std::string child = ChildPath(path, name);
          CheckTag(key, child);
          int line = key.Mark().line + 1;
          auto [it, inserted] = first_line.emplace(name, line);
          if (!inserted) {
            Error(child, fmt::format("duplicate key (lines {} and {})", it->second, line));
            continue;
          }
          out[name] = Convert(kv.second, child, depth + 1);
        }
        return out;
      }
    }
    return nullptr;
  }

 private:
  Json Scalar(const YAML::Node& node, const std::string& path) {
    const std::string& text = node.Scalar();
    if (!IsValidUtf8(text)) {
      Error(path, "is not valid UTF-8");
      return "";
    }
    const std::string& tag = node.Tag();
    static constexpr std::string_view kCore = "tag:yaml.org,2002:";
    bool resolve = tag == "?" || tag == std::string(kCore) + "int" ||
                   tag == std::string(kCore) + "float" || tag == std::string(kCore) + "bool" ||
                   tag == std::string(kCore) + "null";
    // A quoted or block scalar ("!") or one tagged !!str stays a string.
    return resolve ? ResolvePlainScalar(text) : Json(text);
  }

  // A spec is plain data: a tag asking for anything else (`!!python/object:os.system`,
  // `!include`, `!!binary`) is refused rather than quietly read as text.
  void CheckTag(const YAML::Node& node, const std::string& path) {
    const std::string& tag = node.Tag();
    if (tag.empty() || tag == "?" || tag == "!") return;  // untagged: plain, or quoted
    static constexpr std::string_view kCore = "tag:yaml.org,2002:";
    static constexpr std::array<std::string_view, 7> kPlainTypes = {"str",  "int", "float", "bool",
                                                                    "null", "map", "seq"};
    std::string_view name = tag;
    const bool core = name.starts_with(kCore);
    if (core) {
      name.remove_prefix(kCore.size());
      if (std::find(kPlainTypes.begin(), kPlainTypes.end(), name) != kPlainTypes.end()) return;
    }
    std::string shown = core ? fmt::format("!!{}", name) : tag;
    Error(path,
          fmt::format("the YAML tag {} is not allowed; a {} holds plain values only "
                      "(tags allowed: !!str, !!int, !!float, !!bool, !!null, !!map, !!seq)",
                      Json(shown).dump(-1, ' ', false, Json::error_handler_t::replace), kind_));
  }

  void Error(const std::string& path, std::string_view reason) {
    errors_->push_back(fmt::format("{}: {}", path.empty() ? std::string(kind_) : path, reason));
  }

  std::string_view kind_;
  std::vector<std::string>* errors_;
  size_t nodes_ = 0;
};

// Where each document of a YAML stream starts, without building any nodes.
class DocumentCounter final : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;

  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// "<source>:<line>:<column>: <reason>" from nlohmann's "... at line 1, column 8: <reason>".
std::string JsonSyntaxError(std::string_view source, const Json::parse_error& e) {
  std::string what = e.what();
  int line = 0, column = 0;
  size_t at = what.find(" at line ");
  if (at != std::string::npos &&
      std::sscanf(what.c_str() + at, " at line %d, column %d", &line, &column) == 2) {
    size_t colon = what.find(": ", at);
    if (colon != std::string::npos) {
      return fmt::format("{}:{}:{}: {}", source, line, column, what.substr(colon + 2));
    }
  }
  return fmt::format("{}: {}", source, what);
}

// A text that starts as a JSON object, as nlohmann's parser reads it; it is many times faster
// than yaml-cpp's (docs/performance.md), and `cohort submit` sends JSON. `doc` is null when the
// JSON is broken or repeats a key (nlohmann would keep the last one silently), and `problem`
// then says what is wrong, for a text too long to hand to the YAML reader, which would say
// where.
struct PlainJson {
  Json doc;
  std::string problem;
};

std::optional<PlainJson> ReadPlainJson(std::string_view text, std::string_view source) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != '{') return std::nullopt;
  std::vector<std::set<std::string>> keys;  // of each object being read
  std::string repeated;
  auto note = [&](int, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      keys.pop_back();
    } else if (event == Json::parse_event_t::key && !keys.empty() && repeated.empty() &&
               !keys.back().insert(parsed.get<std::string>()).second) {
      repeated = parsed.get<std::string>();
    }
    return true;
  };
  try {
    Json doc = Json::parse(text, note);
    if (repeated.empty()) return PlainJson{std::move(doc), ""};
    return PlainJson{nullptr, fmt::format("{}: the key {} is given twice in one object", source,
                                          Json(repeated).dump())};
  } catch (const Json::parse_error& e) {
    return PlainJson{nullptr, JsonSyntaxError(source, e)};
  } catch (const std::exception& e) {
    return PlainJson{nullptr, fmt::format("{}: {}", source, JsonErrorText(e))};
  }
}

}  // namespace

std::string SpecTooLarge(uint64_t bytes, std::string_view kind) {
  return fmt::format("{} bytes is too large; a {} is at most {} bytes ({})", bytes, kind,
                     kMaxSpecBytes, FormatByteSize(kMaxSpecBytes));
}

StatusOr<SpecDocument> ReadSpecDocument(std::string_view text, std::string_view source,
                                        std::string_view kind) {
  if (static_cast<int64_t>(text.size()) > kMaxSpecBytes) {
    return Status::InvalidArgument(fmt::format("{}: {}", source, SpecTooLarge(text.size(), kind)));
  }
  try {
    auto json = ReadPlainJson(text, source);
    if (json && json->problem.empty()) return SpecDocument{std::move(json->doc), {}};
    if (static_cast<int64_t>(text.size()) > kMaxYamlSpecBytes) {
      if (json) return Status::InvalidArgument(json->problem);
      return Status::InvalidArgument(fmt::format(
          "{}: {} bytes is too large for YAML; a {} in YAML is at most {} bytes ({}), in JSON {} "
          "bytes ({})",
          source, text.size(), kind, kMaxYamlSpecBytes, FormatByteSize(kMaxYamlSpecBytes),
          kMaxSpecBytes, FormatByteSize(kMaxSpecBytes)));
    }
    DocumentCounter counter;
    YAML::Node root;
    try {
      // Count the documents first (YAML::LoadAll never returns on some inputs), then load.
      std::istringstream in{std::string(text)};
      YAML::Parser parser(in);
      while (counter.starts.size() < 4 && parser.HandleNextDocument(counter)) {
        const auto& starts = counter.starts;
        if (starts.size() >= 2 && starts.back().pos == starts[starts.size() - 2].pos) {
          // The parser made no progress: it is stuck on a token that cannot start a document.
          const YAML::Mark& at = starts.back();
          char c = at.pos >= 0 && static_cast<size_t>(at.pos) < text.size() ? text[at.pos] : 0;
          std::string what = std::isgraph(static_cast<unsigned char>(c))
                                 ? fmt::format("unexpected \"{}\"", c)
                                 : std::string("cannot parse from here");
          return Status::InvalidArgument(
              fmt::format("{}:{}:{}: {}", source, at.line + 1, at.column + 1, what));
        }
      }
      if (counter.starts.size() == 1) root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      // JSON is YAML, but yaml-cpp's messages for broken JSON are poor, and JSON that it
      // refuses may still be valid JSON.
      size_t first = text.find_first_not_of(" \t\r\n");
      if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[')) {
        try {
          return SpecDocument{Json::parse(text), {}};
        } catch (const Json::parse_error& je) {
          return Status::InvalidArgument(JsonSyntaxError(source, je));
        }
      }
      if (e.mark.is_null()) return Status::InvalidArgument(fmt::format("{}: {}", source, e.msg));
      return Status::InvalidArgument(
          fmt::format("{}:{}:{}: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg));
    }
    if (counter.starts.size() > 1) {
      return Status::InvalidArgument(fmt::format(
          "{}: holds more than one YAML document; a {} is a single document", source, kind));
    }
    SpecDocument read{nullptr, {}};
    if (counter.starts.size() == 1) {
      YamlConverter converter(kind, &read.errors);
      try {
        read.doc = converter.Convert(root, "", 0);
      } catch (const DocumentTooComplex&) {
        return Status::InvalidArgument(fmt::format(
            "{}: the document is nested too deeply or expands (through aliases) too far", source));
      }
    }
    return read;
  } catch (const std::exception& e) {
    return Status::InvalidArgument(
        fmt::format("{}: cannot read the {}: {}", source, kind, JsonErrorText(e)));
  }
}

}  // namespace cohort
