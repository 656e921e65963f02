// Errors about JSON documents in the project's own words: what a value is ("a number", "null"),
// and a JSON library exception's text without the library's "[json.exception.type_error.302]"
// tag, so that no answer or log line quotes the library's internals.
#pragma once

#include <exception>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace cohort {

// "a number (3)", "a string", "null", "a list", "an object", "true": for "must be X, not Y".
std::string DescribeJsonValue(const nlohmann::json& value);

// The text of an exception thrown while reading a document: ours as it is, the JSON library's
// without its tag ("parse error at line 1, column 5: ..." keeps where and why).
std::string JsonErrorText(const std::exception& error);

}  // namespace cohort
