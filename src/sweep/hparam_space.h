// The hyperparameter space of a sweep (docs/sweeps.md, "hyperparameters"): reading it from a
// spec, its canonical form, its grid, random draws from it, and whether a value belongs to it.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/json.h"
#include "sweep/random_stream.h"
#include "sweep/sweep_spec.h"

namespace cohort::sweep {

// The leaves of `hyperparameters:` by dotted name, each error "hyperparameters.lr.minval: ..."
// appended to `errors`. `named`, if given, gets every leaf's name, the ones in error too (so
// that a placeholder naming one is not reported again).
std::vector<HyperParameter> ParseSpace(const Json& v, std::vector<std::string>* errors,
                                       std::set<std::string>* named = nullptr);
// The canonical form: nested mappings, every leaf {type: ...}.
Json SpaceToJson(const std::vector<HyperParameter>& space);

// The grid's points of one leaf, in order: a range's `count` points evenly spaced from minval
// to maxval (ints rounded, repeats dropped), a categorical's vals, a constant's value. Empty for
// a range without count.
std::vector<Json> GridAxis(const HyperParameter& hp);
// A value drawn from `stream`.
Json Draw(const HyperParameter& hp, RandomStream* stream);
// Why `value` is not one of the leaf's values, or nothing if it is.
std::optional<std::string> ValueProblem(const HyperParameter& hp, const Json& value);
// A text at least as long as any of the leaf's values' texts (model/trial.h, HParamText), to
// check a trial template's sizes with.
std::string LongestText(const HyperParameter& hp);
// The leaf's values as text when they are few (categorical, const), for checks that depend on
// the text itself (a workdir, a program); nothing for a range, whose texts are numbers.
std::optional<std::vector<std::string>> ValueTexts(const HyperParameter& hp);

// `obj` with `value` at the dotted name, creating the mappings on the way.
void SetDotted(Json* obj, std::string_view dotted, Json value);
// The value at the dotted name of `obj`, or null if there is none.
const Json* FindDotted(const Json& obj, std::string_view dotted);

}  // namespace cohort::sweep
