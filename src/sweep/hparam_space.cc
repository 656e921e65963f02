#include "sweep/hparam_space.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <span>

#include "model/spec_fields.h"
#include "model/trial.h"
#include "sweep/sweep_limits.h"

namespace cohort::sweep {
namespace {

using Fields = std::span<const std::string_view>;
constexpr std::array<std::string_view, 4> kRangeFields = {"type", "minval", "maxval", "count"};
constexpr std::array<std::string_view, 5> kLogFields = {"type", "minval", "maxval", "base",
                                                        "count"};
constexpr std::array<std::string_view, 2> kCategoricalFields = {"type", "vals"};
constexpr std::array<std::string_view, 2> kConstFields = {"type", "val"};
// The longest text of a double (std::to_chars' shortest form), for LongestText.
constexpr std::string_view kLongestDoubleText = "-2.2250738585072014e-308";

Fields FieldsOf(HParamType type) {
  switch (type) {
    case HParamType::kInt:
    case HParamType::kDouble:
      return kRangeFields;
    case HParamType::kLog:
      return kLogFields;
    case HParamType::kCategorical:
      return kCategoricalFields;
    case HParamType::kConst:
      return kConstFields;
  }
  return kConstFields;
}

bool IsName(std::string_view s) {
  auto head = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  auto tail = [&](char c) { return head(c) || (c >= '0' && c <= '9'); };
  return !s.empty() && head(s[0]) && std::all_of(s.begin() + 1, s.end(), tail);
}

class SpaceReader {
 public:
  SpaceReader(std::vector<std::string>* errors, std::set<std::string>* named)
      : errors_(errors), named_(named) {}

  std::vector<HyperParameter> Read(const Json& v) {
    if (!v.is_object() || v.empty()) {
      Error("hyperparameters",
            fmt::format("must be a mapping of names to values or ranges such as {{lr: {{type: "
                        "log, minval: -4, maxval: -1}}}}, got {}",
                        DescribeSpecValue(v)));
      return {};
    }
    Level(v, "hyperparameters", "", 1);
    if (space_.size() > kMaxHyperParameters) {
      Error("hyperparameters", fmt::format("has {} hyperparameters; at most {} are allowed",
                                           space_.size(), kMaxHyperParameters));
    }
    std::sort(space_.begin(), space_.end(),
              [](const HyperParameter& a, const HyperParameter& b) { return a.name < b.name; });
    // Two names that give one variable would leave a trial one of the two values.
    std::map<std::string, std::string> by_variable;
    for (const HyperParameter& hp : space_) {
      auto [it, inserted] = by_variable.emplace(HParamEnvName(hp.name), hp.name);
      if (!inserted) {
        Error(
            ChildPath("hyperparameters", hp.name),
            fmt::format("gives the variable {} as \"{}\" does; rename one", it->first, it->second));
      }
    }
    return std::move(space_);
  }

 private:
  void Error(const std::string& path, std::string_view reason) {
    errors_->push_back(fmt::format("{}: {}", path, reason));
  }

  void Level(const Json& obj, const std::string& path, const std::string& prefix, int depth) {
    for (const auto& [key, value] : obj.items()) {
      std::string p = ChildPath(path, key);
      std::string name = prefix.empty() ? key : prefix + "." + key;
      if (!IsName(key)) {
        Error(p,
              "is not a valid hyperparameter name: use letters, digits and '_', not starting "
              "with a digit");
        continue;
      }
      if (space_.size() > kMaxHyperParameters) return;  // reported once, in Read
      if (value.is_object() && !value.contains("type")) {
        if (value.empty()) {
          Error(p, "is an empty mapping; give a value, a range {type: ...} or nested names");
        } else if (depth >= kMaxHParamDepth) {
          Error(p, fmt::format("nests names more than {} deep", kMaxHParamDepth));
        } else {
          Level(value, p, name, depth + 1);
        }
        continue;
      }
      Leaf(value, p, name);
    }
  }

  void Leaf(const Json& v, const std::string& path, const std::string& name) {
    if (named_ != nullptr) named_->insert(name);
    HyperParameter hp;
    hp.name = name;
    if (!v.is_object()) {
      if (v.is_null()) {
        Error(path, "has no value; give a constant, a range {type: ...} or nested names");
      } else if (v.is_array()) {
        Error(path,
              "a list is not a hyperparameter; for a choice write {type: categorical, "
              "vals: [...]}");
      } else if (Scalar(v, path)) {
        hp.type = HParamType::kConst;
        hp.val = v;
        space_.push_back(std::move(hp));
      }
      return;
    }
    const Json& type = v.at("type");
    std::optional<HParamType> parsed;
    if (type.is_string()) parsed = Parse(kHParamTypeNames, type.get_ref<const std::string&>());
    if (!parsed) {
      Error(ChildPath(path, "type"),
            fmt::format("{} is not a type; use {}", DescribeSpecValue(type),
                        NameList(kHParamTypeNames)));
      return;
    }
    hp.type = *parsed;
    Fields known = FieldsOf(hp.type);
    for (const auto& [key, value] : v.items()) {
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      Error(ChildPath(path, key),
            fmt::format("unknown field of a {} hyperparameter; {}", type.get<std::string>(),
                        UnknownFieldHint(key, known)));
    }
    bool ok = true;
    switch (hp.type) {
      case HParamType::kInt:
      case HParamType::kDouble:
      case HParamType::kLog:
        ok = Range(v, path, &hp);
        break;
      case HParamType::kCategorical:
        ok = Categorical(v, path, &hp);
        break;
      case HParamType::kConst:
        if (auto it = v.find("val"); it == v.end()) {
          Error(ChildPath(path, "val"), "required field is missing");
          ok = false;
        } else {
          ok = Scalar(*it, ChildPath(path, "val"));
          hp.val = *it;
        }
        break;
    }
    if (ok) space_.push_back(std::move(hp));
  }

  // A value a trial can be given as text: a string, a number or true/false.
  bool Scalar(const Json& v, const std::string& path) {
    if (v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      if (s.find('\0') != std::string::npos) {
        Error(path, "must not contain a NUL character");
        return false;
      }
      if (s.size() > kMaxHParamTextBytes) {
        Error(path,
              fmt::format("is {} bytes; a value is at most {}", s.size(), kMaxHParamTextBytes));
        return false;
      }
      return true;
    }
    if (v.is_boolean() || v.is_number_integer() || v.is_number_float()) return true;
    Error(path,
          fmt::format("must be a string, a number or true/false, got {}", DescribeSpecValue(v)));
    return false;
  }

  bool Number(const Json& obj, const std::string& path, std::string_view field, bool integer,
              double* out) {
    std::string p = ChildPath(path, field);
    auto it = obj.find(std::string(field));
    if (it == obj.end()) {
      Error(p, "required field is missing");
      return false;
    }
    const Json& v = *it;
    if (integer) {
      bool ok = false;
      if (v.is_number_unsigned()) {
        ok = v.get<uint64_t>() <= static_cast<uint64_t>(kMaxHParamInt);
      } else if (v.is_number_integer()) {
        ok = v.get<int64_t>() >= -kMaxHParamInt && v.get<int64_t>() <= kMaxHParamInt;
      }
      if (!ok) {
        Error(p, fmt::format("must be an integer from {} to {}, got {}", -kMaxHParamInt,
                             kMaxHParamInt, DescribeSpecValue(v)));
        return false;
      }
      *out = static_cast<double>(v.get<int64_t>());
      return true;
    }
    if (!v.is_number() || !(std::abs(v.get<double>()) <= kMaxHParamMagnitude)) {
      Error(p, fmt::format("must be a number from {} to {}, got {}", -kMaxHParamMagnitude,
                           kMaxHParamMagnitude, DescribeSpecValue(v)));
      return false;
    }
    *out = v.get<double>();
    return true;
  }

  bool Range(const Json& v, const std::string& path, HyperParameter* hp) {
    const bool integer = hp->type == HParamType::kInt;
    bool ok = Number(v, path, "minval", integer, &hp->minval);
    ok = Number(v, path, "maxval", integer, &hp->maxval) && ok;
    if (ok && hp->maxval < hp->minval) {
      Error(ChildPath(path, "maxval"), fmt::format("must be at least minval ({}), got {}",
                                                   v.at("minval").dump(), v.at("maxval").dump()));
      ok = false;
    }
    if (auto it = v.find("count"); it != v.end()) {
      if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > kMaxGridSize) {
        Error(
            ChildPath(path, "count"),
            fmt::format("must be an integer from 1 to {} (the grid's points on this axis), got {}",
                        kMaxGridSize, DescribeSpecValue(*it)));
        ok = false;
      } else {
        hp->count = static_cast<int>(it->get<int64_t>());
      }
    }
    if (hp->type != HParamType::kLog) return ok;
    if (auto it = v.find("base"); it != v.end()) {
      if (!it->is_number() || !(it->get<double>() > 0) || it->get<double>() == 1 ||
          !(it->get<double>() <= kMaxHParamMagnitude)) {
        Error(ChildPath(path, "base"), fmt::format("must be a positive number other than 1, got {}",
                                                   DescribeSpecValue(*it)));
        return false;
      }
      hp->base = it->get<double>();
    }
    if (!ok) return false;
    for (double x : {hp->minval, hp->maxval}) {
      double value = std::pow(hp->base, x);
      if (!(value > 0) || !(value <= kMaxHParamMagnitude)) {
        Error(path, fmt::format("{}^{} is outside what a value may be (above 0, at most {})",
                                hp->base, x, kMaxHParamMagnitude));
        return false;
      }
    }
    return true;
  }

  bool Categorical(const Json& v, const std::string& path, HyperParameter* hp) {
    std::string p = ChildPath(path, "vals");
    auto it = v.find("vals");
    if (it == v.end()) {
      Error(p, "required field is missing");
      return false;
    }
    if (!it->is_array() || it->empty()) {
      Error(p, fmt::format("must be a list of the choices, e.g. [sgd, adam], got {}",
                           DescribeSpecValue(*it)));
      return false;
    }
    if (it->size() > kMaxCategoricalVals) {
      Error(p,
            fmt::format("has {} choices; at most {} are allowed", it->size(), kMaxCategoricalVals));
      return false;
    }
    bool ok = true;
    std::map<Json, size_t> first;  // each value's first index
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& choice = (*it)[i];
      if (!Scalar(choice, IndexPath(p, i))) {
        ok = false;
        continue;
      }
      auto [seen, inserted] = first.emplace(choice, i);
      if (!inserted) {
        Error(IndexPath(p, i), fmt::format("{} is already {}", DescribeSpecValue(choice),
                                           IndexPath("vals", seen->second)));
        ok = false;
      }
      hp->vals.push_back(choice);
    }
    return ok;
  }

  std::vector<std::string>* errors_;
  std::set<std::string>* named_;
  std::vector<HyperParameter> space_;
};

Json Bound(const HyperParameter& hp, double x) {
  return hp.type == HParamType::kInt ? Json(static_cast<int64_t>(x)) : Json(x);
}

}  // namespace

std::vector<HyperParameter> ParseSpace(const Json& v, std::vector<std::string>* errors,
                                       std::set<std::string>* named) {
  return SpaceReader(errors, named).Read(v);
}

Json SpaceToJson(const std::vector<HyperParameter>& space) {
  Json out = Json::object();
  for (const HyperParameter& hp : space) {
    Json leaf = {{"type", NameOf(kHParamTypeNames, hp.type)}};
    switch (hp.type) {
      case HParamType::kInt:
      case HParamType::kDouble:
      case HParamType::kLog:
        leaf["minval"] = Bound(hp, hp.minval);
        leaf["maxval"] = Bound(hp, hp.maxval);
        if (hp.type == HParamType::kLog) leaf["base"] = hp.base;
        if (hp.count) leaf["count"] = *hp.count;
        break;
      case HParamType::kCategorical:
        leaf["vals"] = hp.vals;
        break;
      case HParamType::kConst:
        leaf["val"] = hp.val;
        break;
    }
    SetDotted(&out, hp.name, std::move(leaf));
  }
  return out;
}

std::vector<Json> GridAxis(const HyperParameter& hp) {
  switch (hp.type) {
    case HParamType::kConst:
      return {hp.val};
    case HParamType::kCategorical:
      return hp.vals;
    default:
      break;
  }
  if (!hp.count) return {};
  const int n = *hp.count;
  std::vector<Json> points;
  for (int i = 0; i < n; ++i) {
    // Both ends exactly; a single point is minval.
    double x = i == 0       ? hp.minval
               : i == n - 1 ? hp.maxval
                            : hp.minval + (hp.maxval - hp.minval) * i / (n - 1);
    Json point;
    if (hp.type == HParamType::kInt) {
      point = static_cast<int64_t>(std::llround(x));
      if (!points.empty() && points.back() == point) continue;
    } else if (hp.type == HParamType::kLog) {
      point = std::pow(hp.base, x);
    } else {
      point = x;
    }
    points.push_back(std::move(point));
  }
  return points;
}

Json Draw(const HyperParameter& hp, RandomStream* stream) {
  switch (hp.type) {
    case HParamType::kConst:
      return hp.val;
    case HParamType::kCategorical:
      return hp.vals[stream->Below(hp.vals.size())];
    case HParamType::kInt: {
      auto lo = static_cast<int64_t>(hp.minval);
      auto span = static_cast<uint64_t>(static_cast<int64_t>(hp.maxval) - lo) + 1;
      return lo + static_cast<int64_t>(stream->Below(span));
    }
    case HParamType::kDouble:
      return hp.minval + stream->Uniform() * (hp.maxval - hp.minval);
    case HParamType::kLog:
      return std::pow(hp.base, hp.minval + stream->Uniform() * (hp.maxval - hp.minval));
  }
  return hp.val;
}

std::optional<std::string> ValueProblem(const HyperParameter& hp, const Json& value) {
  switch (hp.type) {
    case HParamType::kConst:
      if (value == hp.val) return std::nullopt;
      return fmt::format("must be the constant {}, got {}", hp.val.dump(),
                         DescribeSpecValue(value));
    case HParamType::kCategorical:
      if (std::find(hp.vals.begin(), hp.vals.end(), value) != hp.vals.end()) return std::nullopt;
      return fmt::format("{} is not one of the choices", DescribeSpecValue(value));
    case HParamType::kInt:
      if (value.is_number_integer() && value.get<double>() >= hp.minval &&
          value.get<double>() <= hp.maxval) {
        return std::nullopt;
      }
      return fmt::format("must be an integer from {} to {}, got {}", Bound(hp, hp.minval).dump(),
                         Bound(hp, hp.maxval).dump(), DescribeSpecValue(value));
    case HParamType::kDouble:
      if (value.is_number() && value.get<double>() >= hp.minval &&
          value.get<double>() <= hp.maxval) {
        return std::nullopt;
      }
      return fmt::format("must be a number from {} to {}, got {}", hp.minval, hp.maxval,
                         DescribeSpecValue(value));
    case HParamType::kLog: {
      double a = std::pow(hp.base, hp.minval), b = std::pow(hp.base, hp.maxval);
      double lo = std::min(a, b), hi = std::max(a, b);
      // pow's last bit may differ between the ends and a draw near them.
      constexpr double kSlack = 1e-12;
      if (value.is_number() && value.get<double>() >= lo * (1 - kSlack) &&
          value.get<double>() <= hi * (1 + kSlack)) {
        return std::nullopt;
      }
      return fmt::format("must be a number from {} to {}, got {}", lo, hi,
                         DescribeSpecValue(value));
    }
  }
  return "has an unknown type";
}

std::string LongestText(const HyperParameter& hp) {
  auto longer = [](std::string a, std::string b) { return b.size() > a.size() ? b : a; };
  switch (hp.type) {
    case HParamType::kConst:
      return HParamText(hp.val);
    case HParamType::kCategorical: {
      std::string out;
      for (const Json& v : hp.vals) out = longer(out, HParamText(v));
      return out;
    }
    case HParamType::kInt:
      return longer(HParamText(Bound(hp, hp.minval)), HParamText(Bound(hp, hp.maxval)));
    case HParamType::kDouble:
    case HParamType::kLog:
      return std::string(kLongestDoubleText);
  }
  return "";
}

std::optional<std::vector<std::string>> ValueTexts(const HyperParameter& hp) {
  if (hp.type == HParamType::kConst) return std::vector<std::string>{HParamText(hp.val)};
  if (hp.type != HParamType::kCategorical) return std::nullopt;
  std::vector<std::string> texts;
  for (const Json& v : hp.vals) texts.push_back(HParamText(v));
  return texts;
}

void SetDotted(Json* obj, std::string_view dotted, Json value) {
  Json* at = obj;
  size_t start = 0;
  while (true) {
    size_t dot = dotted.find('.', start);
    std::string key(
        dotted.substr(start, dot == std::string_view::npos ? dotted.npos : dot - start));
    if (dot == std::string_view::npos) {
      (*at)[key] = std::move(value);
      return;
    }
    Json& next = (*at)[key];
    if (!next.is_object()) next = Json::object();
    at = &next;
    start = dot + 1;
  }
}

const Json* FindDotted(const Json& obj, std::string_view dotted) {
  const Json* at = &obj;
  size_t start = 0;
  while (true) {
    size_t dot = dotted.find('.', start);
    std::string key(
        dotted.substr(start, dot == std::string_view::npos ? dotted.npos : dot - start));
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    if (dot == std::string_view::npos) return &*it;
    at = &*it;
    start = dot + 1;
  }
}

}  // namespace cohort::sweep
