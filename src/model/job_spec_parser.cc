#include "model/job_spec_parser.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/units.h"
#include "model/job_size.h"
#include "model/json_errors.h"
#include "model/limits.h"
#include "model/node_validation.h"
#include "model/secret.h"
#include "model/workdir.h"

namespace cohort {
namespace {

constexpr std::string_view kDefaultSource = "job spec";

constexpr size_t kMaxNameLength = 128;
constexpr size_t kMaxTeamLength = 64;
constexpr int64_t kMaxAttempts = 100;
constexpr Duration kMaxGracePeriod = std::chrono::hours(1);
constexpr Duration kMaxBackoff = std::chrono::hours(1);

// Canonical text of a duration that ParseDuration reads back exactly, to the microsecond as
// Duration counts (the state store keeps a job's spec in this form).
std::string DurationText(Duration d) {
  if (d <= Duration::zero()) return FormatDuration(d);
  Duration rest = d % std::chrono::seconds(1);
  std::string text = d >= std::chrono::seconds(1) ? FormatDuration(d - rest) : "";
  int64_t us = rest.count();
  if (us % 1000 != 0) return text + fmt::format("{}us", us);
  if (us != 0) text += fmt::format("{}ms", us / 1000);
  return text;
}

// Guards against documents that expand without bound through YAML aliases.
constexpr int kMaxDepth = 64;
constexpr size_t kMaxNodes = 100'000;

using Fields = std::span<const std::string_view>;
constexpr std::array<std::string_view, 9> kJobFields = {
    "name",    "team",        "priority",     "framework",  "tasks",
    "restart", "max_runtime", "grace_period", "constraints"};
constexpr std::array<std::string_view, 6> kTaskFields = {"role",    "replicas", "resources",
                                                         "command", "env",      "workdir"};
constexpr std::array<std::string_view, 3> kResourceFields = {"gpus", "cpus", "memory"};
constexpr std::array<std::string_view, 5> kRestartFields = {"max_attempts", "on", "backoff",
                                                            "max_backoff", "fence"};
constexpr std::array<std::string_view, 2> kConstraintFields = {"gpu_model", "labels"};

constexpr std::array<std::string_view, 9> kReservedEnv = {
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK",
    "LOCAL_RANK",           "LOCAL_WORLD_SIZE",  "TF_CONFIG"};
constexpr std::string_view kReservedEnvPrefix = "COHORT_";

constexpr std::array<std::string_view, 4> kTensorFlowRoles = {"chief", "worker", "ps", "evaluator"};
constexpr std::string_view kCommandHint = "must be a list of strings, e.g. [python3, train.py]";

// The mappings of the schema, each with its own fields.
enum class Level { kJob, kTask, kResources, kRestart, kConstraints };

Fields KnownFields(Level level) {
  switch (level) {
    case Level::kJob:
      return kJobFields;
    case Level::kTask:
      return kTaskFields;
    case Level::kResources:
      return kResourceFields;
    case Level::kRestart:
      return kRestartFields;
    case Level::kConstraints:
      return kConstraintFields;
  }
  return kJobFields;
}

bool Contains(Fields fields, std::string_view s) {
  return std::find(fields.begin(), fields.end(), s) != fields.end();
}

std::string Child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

std::string Index(const std::string& path, size_t i) { return fmt::format("{}[{}]", path, i); }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
// neighbours each cost 1.
size_t EditDistance(std::string_view a, std::string_view b) {
  const size_t longer = std::max(a.size(), b.size());
  if (longer - std::min(a.size(), b.size()) > 2) return longer;  // far apart anyway
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// The value as a person would recognise it in their file: "two", 2.5, true, null, a list.
std::string Describe(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return v.dump();
    case Json::value_t::string: {
      std::string s = v.get<std::string>();
      if (s.size() > 60) s = s.substr(0, 57) + "...";
      return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    case Json::value_t::array:
      return v.empty() ? "an empty list" : "a list";
    case Json::value_t::object:
      return v.empty() ? "an empty mapping" : "a mapping";
    default:
      return "a binary value";
  }
}

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

// Converts a YAML tree to JSON, reporting what JSON cannot say or what a job spec must not
// contain (duplicate keys, keys that are not scalars) into `errors`.
class YamlConverter {
 public:
  explicit YamlConverter(std::vector<std::string>* errors) : errors_(errors) {}

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
        for (const auto& item : node) out.push_back(Convert(item, Index(path, i++), depth + 1));
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
          std::string child = Child(path, name);
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

  // A job spec is plain data: a tag asking for anything else (`!!python/object:os.system`,
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
      if (Contains(kPlainTypes, name)) return;
    }
    std::string shown = core ? fmt::format("!!{}", name) : tag;
    Error(path, fmt::format("the YAML tag {} is not allowed; a job spec holds plain values only "
                            "(tags allowed: !!str, !!int, !!float, !!bool, !!null, !!map, !!seq)",
                            Json(shown).dump(-1, ' ', false, Json::error_handler_t::replace)));
  }

  void Error(const std::string& path, std::string_view reason) {
    errors_->push_back(fmt::format("{}: {}", path.empty() ? kDefaultSource : path, reason));
  }

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

// ---------------------------------------------------------------------------------------------
// Validation.

class Validator {
 public:
  Validator(std::vector<std::string> errors, std::string base_dir)
      : errors_(std::move(errors)), base_dir_(std::move(base_dir)) {}

  std::vector<std::string>& errors() { return errors_; }

  JobSpec Job(const Json& doc) {
    JobSpec spec;
    if (doc.is_null()) {
      errors_.push_back("job spec is empty; it needs at least name and tasks");
      return spec;
    }
    if (!doc.is_object()) {
      errors_.push_back(fmt::format(
          "job spec must be a mapping with fields such as name and tasks, got {}", Describe(doc)));
      return spec;
    }
    Unknown(doc, "", Level::kJob);
    Identifier(doc, "", "name", kMaxNameLength, true, &spec.name);
    Identifier(doc, "", "team", kMaxTeamLength, false, &spec.team);
    if (const Json* v = Find(doc, "priority")) Priority(*v, &spec.priority);
    if (const Json* v = Find(doc, "framework")) FrameworkField(*v, &spec.framework);

    if (const Json* v = Find(doc, "tasks")) {
      if (!v->is_array()) {
        Error("tasks", fmt::format("must be a list of task groups, got {}", Describe(*v)));
      } else if (v->empty()) {
        Error("tasks", "must list at least one task group");
      } else {
        for (size_t i = 0; i < v->size(); ++i) {
          spec.tasks.push_back(Group((*v)[i], Index("tasks", i)));
        }
      }
    } else {
      Error("tasks", "required field is missing");
    }

    if (const Json* v = Find(doc, "restart")) Restart(*v, &spec.restart);
    if (const Json* v = Find(doc, "max_runtime")) {
      Duration d{};
      if (DurationField(*v, "max_runtime", &d)) {
        if (d <= Duration::zero()) {
          Error("max_runtime", fmt::format("must be longer than 0s, got {}", Describe(*v)));
        } else {
          spec.max_runtime = d;
        }
      }
    }
    if (const Json* v = Find(doc, "grace_period")) {
      Duration d{};
      if (DurationField(*v, "grace_period", &d)) {
        if (d > kMaxGracePeriod) {
          Error("grace_period", fmt::format("must be at most 1h, got {}", Describe(*v)));
        } else {
          spec.grace_period = d;
        }
      }
    }

    if (const Json* v = Find(doc, "constraints")) ConstraintsField(*v, &spec.constraints);

    CrossChecks(doc, spec);
    return spec;
  }

 private:
  void Error(const std::string& path, std::string_view reason) {
    errors_.push_back(fmt::format("{}: {}", path, reason));
  }

  static const Json* Find(const Json& obj, std::string_view key) {
    auto it = obj.find(std::string(key));
    return it == obj.end() ? nullptr : &*it;
  }

  // Fields of `obj` that the schema does not know, with the closest known name when there is
  // one, or where the field belongs when it is in the wrong place.
  void Unknown(const Json& obj, const std::string& path, Level level) {
    Fields known = KnownFields(level);
    for (const auto& [key, value] : obj.items()) {
      if (Contains(known, key)) continue;
      std::string reason = "unknown field; ";
      if (std::string hint = Misplaced(level, key); !hint.empty()) {
        reason += hint;
      } else {
        std::string_view best;
        size_t best_distance = 3;
        for (std::string_view k : known) {
          size_t d = EditDistance(Lower(key), k);
          if (d < best_distance) {
            best = k;
            best_distance = d;
          }
        }
        if (!best.empty()) {
          reason += fmt::format("did you mean \"{}\"?", best);
        } else {
          std::vector<std::string_view> names(known.begin(), known.end());
          reason += fmt::format("expected one of: {}", fmt::join(names, ", "));
        }
      }
      Error(Child(path, key), reason);
    }
  }

  // A known field of another level of the schema: say where it goes.
  static std::string Misplaced(Level level, const std::string& key) {
    const bool job_level = level == Level::kJob;
    const bool task_level = level == Level::kTask;
    if (job_level && key == "max_attempts") return "did you mean restart.max_attempts?";
    if (job_level && Contains(kTaskFields, key)) {
      return "it belongs in a task group, an entry of tasks";
    }
    if ((job_level || task_level) && Contains(kResourceFields, key)) {
      return job_level ? "it belongs in tasks[].resources" : "it belongs under resources";
    }
    if (task_level && (Contains(kJobFields, key) || key == "max_attempts")) {
      return "it belongs at the top level of the job spec";
    }
    return "";
  }

  // name, team: [A-Za-z0-9._-], starting with a letter or digit.
  void Identifier(const Json& obj, const std::string& path, std::string_view field,
                  size_t max_length, bool required, std::string* out) {
    std::string p = Child(path, field);
    const Json* v = Find(obj, field);
    if (v == nullptr) {
      if (required) Error(p, "required field is missing");
      return;
    }
    if (!v->is_string()) {
      Error(p, fmt::format("must be a string, got {}", Describe(*v)));
      return;
    }
    const std::string& s = v->get_ref<const std::string&>();
    if (s.size() > max_length) {
      Error(p, fmt::format("must be at most {} characters, got {}", max_length, s.size()));
      return;
    }
    auto allowed = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    };
    if (s.empty() || !std::isalnum(static_cast<unsigned char>(s[0])) ||
        !std::all_of(s.begin(), s.end(), allowed)) {
      Error(p, fmt::format("{} is not a valid {}: use 1 to {} letters, digits, '.', '_' or '-', "
                           "starting with a letter or digit",
                           Describe(*v), field, max_length));
      return;
    }
    *out = s;
  }

  // An integer in [lo, hi]; otherwise reports "must be an integer from lo to hi, got ...".
  bool Integer(const Json& v, const std::string& path, int64_t lo, int64_t hi, int64_t* out) {
    bool ok = false;
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      ok = hi >= 0 && u <= static_cast<uint64_t>(hi) && static_cast<int64_t>(u) >= lo;
      if (ok) *out = static_cast<int64_t>(u);
    } else if (v.is_number_integer()) {
      int64_t i = v.get<int64_t>();
      ok = i >= lo && i <= hi;
      if (ok) *out = i;
    }
    if (!ok)
      Error(path, fmt::format("must be an integer from {} to {}, got {}", lo, hi, Describe(v)));
    return ok;
  }

  void Priority(const Json& v, int* out) {
    if (v.is_string()) {
      if (auto named = ParsePriorityName(v.get_ref<const std::string&>())) {
        *out = *named;
        return;
      }
    } else if (v.is_number_integer()) {
      bool in_range = v.is_number_unsigned()
                          ? v.get<uint64_t>() <= static_cast<uint64_t>(kMaxPriority)
                          : v.get<int64_t>() >= kMinPriority && v.get<int64_t>() <= kMaxPriority;
      if (in_range) {
        *out = static_cast<int>(v.get<int64_t>());
        return;
      }
    }
    Error("priority",
          fmt::format("{} is not a priority; use {} or an integer from {} to {}", Describe(v),
                      NameList(kPriorityNames, ", "), kMinPriority, kMaxPriority));
  }

  void FrameworkField(const Json& v, Framework* out) {
    if (v.is_string()) {
      if (auto f = ParseFramework(v.get_ref<const std::string&>())) {
        *out = *f;
        return;
      }
    }
    Error("framework",
          fmt::format("{} is not a framework; use {}", Describe(v), NameList(kFrameworkNames)));
  }

  TaskGroupSpec Group(const Json& v, const std::string& path) {
    TaskGroupSpec group;
    group.resources = Resources{.gpus = 0, .milli_cpus = 1000, .memory_bytes = int64_t{1} << 30};
    if (!v.is_object()) {
      Error(path, fmt::format("must be a mapping with role, command and the other task fields, "
                              "got {}",
                              Describe(v)));
      return group;
    }
    Unknown(v, path, Level::kTask);
    Role(v, path, &group.role);
    if (const Json* r = Find(v, "replicas")) Replicas(*r, Child(path, "replicas"), &group);
    if (const Json* r = Find(v, "resources")) ResourcesField(*r, Child(path, "resources"), &group);
    Command(v, path, &group.command);
    if (const Json* e = Find(v, "env")) Env(*e, Child(path, "env"), &group);
    if (const Json* w = Find(v, "workdir")) Workdir(*w, Child(path, "workdir"), &group.workdir);
    return group;
  }

  void Role(const Json& obj, const std::string& path, std::string* out) {
    std::string p = Child(path, "role");
    const Json* v = Find(obj, "role");
    if (v == nullptr) {
      Error(p, "required field is missing");
      return;
    }
    if (!v->is_string()) {
      Error(p, fmt::format("must be a string, got {}", Describe(*v)));
      return;
    }
    const std::string& s = v->get_ref<const std::string&>();
    if (!IsValidRole(s)) {
      Error(p, fmt::format("{} is not a valid role: use 1 to {} lowercase letters, digits, '_' or "
                           "'-', starting with a letter",
                           Describe(*v), kMaxRoleLength));
      return;
    }
    *out = s;
  }

  void ResourcesField(const Json& v, const std::string& path, TaskGroupSpec* group) {
    if (!v.is_object()) {
      Error(path, fmt::format("must be a mapping with gpus, cpus and memory, got {}", Describe(v)));
      return;
    }
    Unknown(v, path, Level::kResources);
    if (const Json* g = Find(v, "gpus")) {
      int64_t n = 0;
      if (Integer(*g, Child(path, "gpus"), 0, kMaxTaskGpus, &n)) group->resources.gpus = n;
    }
    if (const Json* c = Find(v, "cpus")) Cpus(*c, Child(path, "cpus"), &group->resources);
    if (const Json* m = Find(v, "memory")) Memory(*m, Child(path, "memory"), &group->resources);
  }

  void Cpus(const Json& v, const std::string& path, Resources* out) {
    int64_t milli = 0;
    if (v.is_string()) {
      auto parsed = Guarded([&] { return ParseMilliCpus(v.get_ref<const std::string&>()); },
                            Describe(v) + " is not a CPU amount; use e.g. 4, 0.5 or 500m");
      if (!parsed.ok()) {
        Error(path, parsed.status().message());
        return;
      }
      milli = *parsed;
    } else if (v.is_number()) {
      double cpus = v.get<double>();
      if (!(cpus > 0)) {
        Error(path, fmt::format("must be greater than 0, got {}", Describe(v)));
        return;
      }
      if (cpus > static_cast<double>(kMaxTaskCpus)) {
        Error(path, fmt::format("must be at most {}, got {}", kMaxTaskCpus, Describe(v)));
        return;
      }
      double exact = cpus * 1000;
      double rounded = std::round(exact);
      if (std::abs(exact - rounded) > 1e-6 + exact * 1e-15) {
        Error(path, fmt::format("{} is finer than a thousandth of a CPU", Describe(v)));
        return;
      }
      milli = static_cast<int64_t>(rounded);
    } else {
      Error(path, fmt::format("must be a number of CPUs (4, 0.5) or a string (\"500m\"), got {}",
                              Describe(v)));
      return;
    }
    if (milli <= 0) {
      Error(path, fmt::format("must be greater than 0, got {}", Describe(v)));
      return;
    }
    if (milli > kMaxTaskCpus * 1000) {
      Error(path, fmt::format("must be at most {}, got {}", kMaxTaskCpus, Describe(v)));
      return;
    }
    out->milli_cpus = milli;
  }

  void Memory(const Json& v, const std::string& path, Resources* out) {
    int64_t bytes = 0;
    if (v.is_string()) {
      auto parsed = Guarded([&] { return ParseByteSize(v.get_ref<const std::string&>()); },
                            Describe(v) + " is not a size; use e.g. 32Gi");
      if (!parsed.ok()) {
        Error(path, parsed.status().message());
        return;
      }
      bytes = *parsed;
    } else if (v.is_number_unsigned()) {
      bytes = v.get<uint64_t>() > static_cast<uint64_t>(kMaxTaskMemoryBytes)
                  ? kMaxTaskMemoryBytes + 1
                  : static_cast<int64_t>(v.get<uint64_t>());
    } else if (v.is_number_integer()) {
      bytes = v.get<int64_t>();
    } else {
      Error(path, fmt::format("must be a size such as \"32Gi\" or a number of bytes, got {}",
                              Describe(v)));
      return;
    }
    if (bytes <= 0) {
      Error(path, fmt::format("must be greater than 0, got {}", Describe(v)));
      return;
    }
    if (bytes > kMaxTaskMemoryBytes) {
      Error(path, fmt::format("must be at most {}, got {}", FormatByteSize(kMaxTaskMemoryBytes),
                              Describe(v)));
      return;
    }
    out->memory_bytes = bytes;
  }

  void Command(const Json& obj, const std::string& path, std::vector<std::string>* out) {
    std::string p = Child(path, "command");
    const Json* v = Find(obj, "command");
    if (v == nullptr) {
      Error(p, "required field is missing");
      return;
    }
    if (!v->is_array()) {
      Error(p, fmt::format("{}, got {}", kCommandHint, Describe(*v)));
      return;
    }
    if (v->empty()) {
      Error(p, fmt::format("{}, got an empty list", kCommandHint));
      return;
    }
    if (v->size() > kMaxCommandArgs) {
      Error(p, fmt::format("has {} arguments; at most {} are allowed", v->size(), kMaxCommandArgs));
      return;
    }
    std::vector<std::string> command;
    bool ok = true;
    size_t bytes = 0;
    for (size_t i = 0; i < v->size(); ++i) {
      const Json& arg = (*v)[i];
      std::string ap = Index(p, i);
      if (!arg.is_string()) {
        Error(ap, fmt::format("must be a string, got {}; command {}", Describe(arg), kCommandHint));
        ok = false;
        continue;
      }
      const std::string& s = arg.get_ref<const std::string&>();
      bytes += s.size();
      if (s.find('\0') != std::string::npos) {
        Error(ap, "must not contain a NUL character");
        ok = false;
      } else if (i == 0 && s.empty()) {
        Error(ap, "the program to run must not be empty");
        ok = false;
      }
      command.push_back(s);
    }
    if (bytes > kMaxCommandBytes) {
      Error(p, fmt::format("its arguments add up to {} bytes; at most {} ({}) are allowed", bytes,
                           kMaxCommandBytes, FormatByteSize(kMaxCommandBytes)));
      ok = false;
    }
    if (ok) *out = std::move(command);
  }

  void Env(const Json& v, const std::string& path, TaskGroupSpec* group) {
    if (!v.is_object()) {
      Error(path, fmt::format("must be a mapping of NAME: value, got {}", Describe(v)));
      return;
    }
    if (v.size() > kMaxEnvVars) {
      Error(path, fmt::format("has {} variables; at most {} are allowed", v.size(), kMaxEnvVars));
      return;
    }
    size_t bytes = 0;
    for (const auto& [name, value] : v.items()) {
      if (name.size() > kMaxEnvNameLength) {
        Error(Child(path, name.substr(0, 32) + "..."),
              fmt::format("a variable name is at most {} characters, got {}", kMaxEnvNameLength,
                          name.size()));
        continue;
      }
      std::string p = Child(path, name);
      auto name_char = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
      };
      if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) ||
          !std::all_of(name.begin(), name.end(), name_char)) {
        Error(p,
              "not a valid variable name: use letters, digits and '_', not starting with a digit");
        continue;
      }
      if (name.starts_with(kReservedEnvPrefix) ||
          std::find(kReservedEnv.begin(), kReservedEnv.end(), name) != kReservedEnv.end()) {
        Error(p, "is set by Cohort and cannot be set in the spec");
        continue;
      }
      if (value.is_object()) {
        // A reference counts as a variable, and its names as bytes; the value is counted when
        // the master resolves it.
        if (auto secret = SecretReference(value, p)) {
          bytes += name.size() + secret->size();
          group->env_secrets[name] = std::move(*secret);
        }
        continue;
      }
      std::string text;
      if (value.is_string()) {
        text = value.get<std::string>();
      } else if (value.is_boolean() || value.is_number()) {
        text = value.dump();
      } else {
        Error(p, fmt::format("must be a string, number, bool or {{secret: NAME}}, got {}{}",
                             Describe(value),
                             value.is_null() ? "; write \"\" for an empty value" : ""));
        continue;
      }
      if (text.find('\0') != std::string::npos) {
        Error(p, "must not contain a NUL character");
        continue;
      }
      if (text.size() > kMaxEnvValueBytes) {
        Error(p, fmt::format("is {} bytes; a value is at most {} ({})", text.size(),
                             kMaxEnvValueBytes, FormatByteSize(kMaxEnvValueBytes)));
        continue;
      }
      bytes += name.size() + text.size();
      group->env[name] = std::move(text);
    }
    if (bytes > kMaxEnvBytes) {
      Error(path, fmt::format("names and values add up to {} bytes; at most {} ({}) are allowed",
                              bytes, kMaxEnvBytes, FormatByteSize(kMaxEnvBytes)));
    }
  }

  // `{secret: NAME}`: the name of a secret of the job's user or team (model/secret.h).
  std::optional<std::string> SecretReference(const Json& v, const std::string& path) {
    constexpr std::string_view kShape =
        "a secret reference is {secret: NAME}, e.g. {secret: wandb} (set with `cohort secret "
        "set wandb`)";
    bool ok = true;
    for (const auto& [key, value] : v.items()) {
      if (key != "secret") {
        Error(Child(path, key), fmt::format("unknown field; {}", kShape));
        ok = false;
      }
    }
    auto it = v.find("secret");
    if (it == v.end()) {
      if (ok) Error(path, fmt::format("the mapping has no field secret; {}", kShape));
      return std::nullopt;
    }
    std::string p = Child(path, "secret");
    if (!it->is_string()) {
      Error(p, fmt::format("must be the secret's name, a string, got {}", Describe(*it)));
      return std::nullopt;
    }
    const std::string& name = it->get_ref<const std::string&>();
    if (Status valid = ValidateSecretName(name, p); !valid.ok()) {
      errors_.push_back(valid.message());
      return std::nullopt;
    }
    if (!ok) return std::nullopt;
    return name;
  }

  // Absolute, or relative without "..": below the spec file's directory when there is one
  // (the CLI), else below the task's own directory on its node (model/workdir.h).
  void Workdir(const Json& v, const std::string& path, std::string* out) {
    if (!v.is_string()) {
      Error(path, fmt::format("must be a string, got {}", Describe(v)));
      return;
    }
    const std::string& given = v.get_ref<const std::string&>();
    if (given.empty()) {
      Error(path, "must not be empty; leave the field out to run in the task's own directory");
      return;
    }
    if (auto problem = WorkdirProblem(given)) {
      Error(path, fmt::format("{} {}", Describe(v), *problem));
      return;
    }
    std::string s = given;
    if (s[0] != '/') {
      s = std::filesystem::path(base_dir_.empty() ? s : base_dir_ + "/" + s)
              .lexically_normal()
              .string();
      if (s.size() > 1 && s.back() == '/') s.pop_back();
      if (s == ".") s.clear();  // the task's directory itself
    }
    *out = s;
  }

  void ConstraintsField(const Json& v, Constraints* out) {
    if (!v.is_object()) {
      Error(
          "constraints",
          fmt::format("must be a mapping such as {{gpu_model: A100, labels: {{rack: r1}}}}, got {}",
                      Describe(v)));
      return;
    }
    Unknown(v, "constraints", Level::kConstraints);
    if (const Json* m = Find(v, "gpu_model")) {
      if (!m->is_string() || m->get_ref<const std::string&>().empty()) {
        Error("constraints.gpu_model",
              fmt::format("must be a GPU model name as `cohort nodes` shows it, got {}",
                          Describe(*m)));
      } else if (m->get_ref<const std::string&>().size() > kMaxGpuModelLength) {
        Error("constraints.gpu_model",
              fmt::format("must be at most {} characters, got {}", kMaxGpuModelLength,
                          m->get_ref<const std::string&>().size()));
      } else {
        out->gpu_model = m->get<std::string>();
      }
    }
    if (const Json* l = Find(v, "labels")) {
      if (!l->is_object()) {
        Error("constraints.labels",
              fmt::format("must be a mapping of label: value, got {}", Describe(*l)));
        return;
      }
      if (l->size() > kMaxLabels) {
        Error("constraints.labels",
              fmt::format("has {} labels; at most {} are allowed", l->size(), kMaxLabels));
        return;
      }
      for (const auto& [key, value] : l->items()) {
        std::string p = Child("constraints.labels", key);
        if (!IsValidLabelKey(key)) {
          Error(p, fmt::format("not a valid label name: use 1 to {} letters, digits, '.', '_', "
                               "'/' and '-'",
                               kMaxLabelKeyLength));
          continue;
        }
        std::string text;
        if (value.is_string()) {
          text = value.get<std::string>();
        } else if (value.is_boolean() || value.is_number()) {
          text = value.dump();
        } else {
          Error(p, fmt::format("must be a string, got {}", Describe(value)));
          continue;
        }
        if (text.size() > kMaxLabelValueLength) {
          Error(p, fmt::format("must be at most {} characters, got {}", kMaxLabelValueLength,
                               text.size()));
          continue;
        }
        out->labels[key] = std::move(text);
      }
    }
  }

  void Restart(const Json& v, RestartPolicy* out) {
    if (!v.is_object()) {
      Error("restart",
            fmt::format("must be a mapping such as {{max_attempts: 3}}, got {}", Describe(v)));
      return;
    }
    Unknown(v, "restart", Level::kRestart);
    if (const Json* m = Find(v, "max_attempts")) {
      int64_t n = 0;
      if (Integer(*m, "restart.max_attempts", 1, kMaxAttempts, &n)) {
        out->max_attempts = static_cast<int>(n);
      }
    }
    if (const Json* on = Find(v, "on")) {
      if (!on->is_array()) {
        Error("restart.on",
              fmt::format("must be a list such as [failure, node_lost, preempted], got {}",
                          Describe(*on)));
      } else {
        out->on.clear();
        for (size_t i = 0; i < on->size(); ++i) {
          const Json& c = (*on)[i];
          std::string p = fmt::format("restart.on[{}]", i);
          auto cause =
              c.is_string() ? ParseRestartCause(c.get_ref<const std::string&>()) : std::nullopt;
          if (!cause) {
            Error(p, fmt::format("{} is not a cause; use {}", Describe(c),
                                 NameList(kRestartCauseNames)));
          } else if (!out->RestartsOn(*cause)) {
            out->on.push_back(*cause);
          }
        }
      }
    }
    Duration d{};
    if (const Json* b = Find(v, "backoff"); b && DurationField(*b, "restart.backoff", &d)) {
      if (d > kMaxBackoff) {
        Error("restart.backoff", fmt::format("must be at most 1h, got {}", Describe(*b)));
      } else {
        out->backoff = d;
        if (!Find(v, "max_backoff")) out->max_backoff = std::max(out->max_backoff, d);
      }
    }
    if (const Json* b = Find(v, "max_backoff"); b && DurationField(*b, "restart.max_backoff", &d)) {
      if (d > kMaxBackoff) {
        Error("restart.max_backoff", fmt::format("must be at most 1h, got {}", Describe(*b)));
      } else if (d < out->backoff) {
        Error("restart.max_backoff", fmt::format("{} is shorter than restart.backoff ({})",
                                                 Describe(*b), DurationText(out->backoff)));
      } else {
        out->max_backoff = d;
      }
    }
    if (const Json* f = Find(v, "fence")) {
      if (!f->is_boolean()) {
        Error("restart.fence", fmt::format("must be true or false, got {}", Describe(*f)));
      } else {
        out->fence = f->get<bool>();
      }
    }
  }

  bool DurationField(const Json& v, const std::string& path, Duration* out) {
    if (!v.is_string()) {
      Error(path, fmt::format("must be a duration such as \"90m\", \"2h\" or \"1h30m\", got {}",
                              Describe(v)));
      return false;
    }
    auto parsed = Guarded([&] { return ParseDuration(v.get_ref<const std::string&>()); },
                          Describe(v) + " is not a duration; use e.g. 90m, 2h or 1h30m");
    if (!parsed.ok()) {
      Error(path, parsed.status().message());
      return false;
    }
    // To the microsecond, as Duration counts; the canonical form (ToJson) says exactly the same.
    *out = *parsed;
    return true;
  }

  // `replicas: 4`, or `replicas: {min: 2, max: 8}` for an elastic group.
  void Replicas(const Json& v, const std::string& path, TaskGroupSpec* group) {
    int64_t n = 0;
    if (!v.is_object()) {
      if (Integer(v, path, 1, kMaxTasks, &n)) group->replicas = static_cast<int>(n);
      return;
    }
    for (const auto& [key, value] : v.items()) {
      if (key != "min" && key != "max") {
        Error(Child(path, key), "unknown field; expected min and max");
      }
    }
    int64_t min = 0, max = 0;
    const Json* lo = Find(v, "min");
    const Json* hi = Find(v, "max");
    if (!lo) Error(Child(path, "min"), "required field is missing");
    if (!hi) Error(Child(path, "max"), "required field is missing");
    bool ok_lo = lo && Integer(*lo, Child(path, "min"), 1, kMaxTasks, &min);
    bool ok_hi = hi && Integer(*hi, Child(path, "max"), 1, kMaxTasks, &max);
    if (!ok_lo || !ok_hi) return;
    if (max < min) {
      Error(Child(path, "max"), fmt::format("must be at least min ({}), got {}", min, max));
      return;
    }
    group->replicas = static_cast<int>(min);
    group->max_replicas = max > min ? static_cast<int>(max) : 0;
  }

  void CrossChecks(const Json& doc, const JobSpec& spec) {
    const Json* tasks = Find(doc, "tasks");
    if (tasks == nullptr || !tasks->is_array()) return;
    std::map<std::string, size_t> first_index;
    int64_t total = 0;
    for (size_t i = 0; i < spec.tasks.size(); ++i) {
      const TaskGroupSpec& g = spec.tasks[i];
      total += std::max(g.replicas, g.max_replicas);
      if (g.role.empty()) continue;  // missing or invalid: reported already
      std::string path = Index("tasks", i);
      auto [it, inserted] = first_index.emplace(g.role, i);
      if (!inserted) {
        Error(Child(path, "role"),
              fmt::format("\"{}\" is already the role of tasks[{}]", g.role, it->second));
      }
      if (g.elastic() && spec.framework == Framework::kTensorFlow) {
        Error(Child(path, "replicas"),
              "TensorFlow's TF_CONFIG lists a fixed cluster: elastic replicas need framework "
              "pytorch (with torchrun) or none");
      }
      if (spec.framework == Framework::kTensorFlow) {
        if (!Contains(kTensorFlowRoles, g.role)) {
          Error(Child(path, "role"),
                fmt::format("\"{}\" is not a TensorFlow role; use chief, worker, ps or evaluator",
                            g.role));
        } else if ((g.role == "chief" || g.role == "evaluator") && g.replicas > 1) {
          Error(Child(path, "replicas"),
                fmt::format("a TensorFlow {} has 1 replica, got {}", g.role, g.replicas));
        }
      }
    }
    if (total > kMaxTasks) {
      Error("tasks",
            fmt::format("the job has {} tasks in all; at most {} are allowed", total, kMaxTasks));
    }
    for (auto& problem : JobSizeProblems(spec)) errors_.push_back(std::move(problem));
  }

  // Runs a units parser; a throw from inside it (std::stod on absurd input) becomes `fallback`.
  template <typename F>
  static auto Guarded(F&& f, const std::string& fallback) -> decltype(f()) {
    try {
      return f();
    } catch (const std::exception&) {
      return Status::InvalidArgument(fallback);
    }
  }

  std::vector<std::string> errors_;
  std::string base_dir_;  // relative workdirs are taken relative to it; empty: kept relative
};

StatusOr<JobSpec> Validate(const Json& doc, std::vector<std::string> errors,
                           std::string_view prefix, const std::string& base_dir = "",
                           bool* names_team = nullptr) {
  if (names_team) *names_team = doc.is_object() && doc.contains("team");
  Validator validator(std::move(errors), base_dir);
  JobSpec spec = validator.Job(doc);
  std::vector<std::string>& found = validator.errors();
  if (found.empty()) return spec;
  size_t n = found.size();
  return Status::InvalidArgument(
      fmt::format("{}job spec has {} error{}", prefix, n, n == 1 ? "" : "s"), std::move(found));
}

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

std::string SpecTooLarge(uint64_t bytes) {
  return fmt::format("{} bytes is too large; a job spec is at most {} bytes ({})", bytes,
                     kMaxSpecBytes, FormatByteSize(kMaxSpecBytes));
}

StatusOr<JobSpec> ParseJobSpec(std::string_view text, std::string_view source, bool* names_team) {
  return ParseJobSpecFile(text, source, "", names_team);
}

StatusOr<JobSpec> ParseJobSpecFile(std::string_view text, std::string_view source,
                                   const std::string& base_dir, bool* names_team) {
  std::string prefix = source == kDefaultSource ? "" : fmt::format("{}: ", source);
  if (static_cast<int64_t>(text.size()) > kMaxSpecBytes) {
    return Status::InvalidArgument(fmt::format("{}: {}", source, SpecTooLarge(text.size())));
  }
  try {
    auto json = ReadPlainJson(text, source);
    if (json && json->problem.empty()) {
      return Validate(json->doc, {}, prefix, base_dir, names_team);
    }
    if (static_cast<int64_t>(text.size()) > kMaxYamlSpecBytes) {
      if (json) return Status::InvalidArgument(json->problem);
      return Status::InvalidArgument(fmt::format(
          "{}: {} bytes is too large for YAML; a job spec in YAML is at most {} bytes ({}), in "
          "JSON {} bytes ({})",
          source, text.size(), kMaxYamlSpecBytes, FormatByteSize(kMaxYamlSpecBytes), kMaxSpecBytes,
          FormatByteSize(kMaxSpecBytes)));
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
          return Validate(Json::parse(text), {}, prefix, base_dir, names_team);
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
          "{}: holds more than one YAML document; a job spec is a single document", source));
    }
    std::vector<std::string> errors;
    Json doc = nullptr;
    if (counter.starts.size() == 1) {
      YamlConverter converter(&errors);
      try {
        doc = converter.Convert(root, "", 0);
      } catch (const DocumentTooComplex&) {
        return Status::InvalidArgument(fmt::format(
            "{}: the document is nested too deeply or expands (through aliases) too far", source));
      }
    }
    return Validate(doc, std::move(errors), prefix, base_dir, names_team);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(
        fmt::format("{}: cannot read the job spec: {}", source, JsonErrorText(e)));
  }
}

StatusOr<JobSpec> ParseJobSpecJson(const Json& doc) {
  try {
    return Validate(doc, {}, "");
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("cannot read the job spec: {}", JsonErrorText(e)));
  }
}

namespace {

Json RestartJson(const RestartPolicy& r) {
  Json on = Json::array();
  for (RestartCause c : r.on) on.push_back(RestartCauseName(c));
  Json out{{"max_attempts", r.max_attempts},
           {"on", std::move(on)},
           {"backoff", DurationText(r.backoff)},
           {"max_backoff", DurationText(r.max_backoff)}};
  // Only when set, so that the canonical form of every other spec stays as it was.
  if (r.fence) out["fence"] = true;
  return out;
}

}  // namespace

Json ToJson(const JobSpec& spec) {
  Json tasks = Json::array();
  for (const auto& g : spec.tasks) {
    const int64_t milli = g.resources.milli_cpus;
    Json cpus = milli % 1000 == 0 ? Json(milli / 1000) : Json(static_cast<double>(milli) / 1000.0);
    Json group = {{"role", g.role},
                  {"replicas", g.elastic() ? Json{{"min", g.replicas}, {"max", g.max_replicas}}
                                           : Json(g.replicas)},
                  {"resources",
                   {{"gpus", g.resources.gpus},
                    {"cpus", cpus},
                    {"memory", FormatByteSize(g.resources.memory_bytes)}}},
                  {"command", g.command}};
    if (!g.env.empty() || !g.env_secrets.empty()) {
      Json env = Json::object();
      for (const auto& [var, value] : g.env) env[var] = value;
      for (const auto& [var, secret] : g.env_secrets) env[var] = Json{{"secret", secret}};
      group["env"] = std::move(env);
    }
    if (!g.workdir.empty()) group["workdir"] = g.workdir;
    tasks.push_back(std::move(group));
  }
  const bool named = spec.priority == kPriorityLow || spec.priority == kPriorityNormal ||
                     spec.priority == kPriorityHigh;
  Json priority = named ? Json(PriorityName(spec.priority)) : Json(spec.priority);
  Json doc = {{"name", spec.name},
              {"team", spec.team},
              {"priority", priority},
              {"framework", FrameworkName(spec.framework)},
              {"tasks", std::move(tasks)},
              {"restart", RestartJson(spec.restart)},
              {"grace_period", DurationText(spec.grace_period)}};
  if (spec.max_runtime) doc["max_runtime"] = DurationText(*spec.max_runtime);
  if (!spec.constraints.empty()) {
    Json constraints = Json::object();
    if (!spec.constraints.gpu_model.empty()) constraints["gpu_model"] = spec.constraints.gpu_model;
    if (!spec.constraints.labels.empty()) constraints["labels"] = spec.constraints.labels;
    doc["constraints"] = std::move(constraints);
  }
  return doc;
}

std::string SpecDigest(const JobSpec& spec) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : ToJson(spec).dump()) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return fmt::format("{:016x}", hash);
}

}  // namespace cohort
