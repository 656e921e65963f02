// Status and StatusOr<T>: how Cohort reports expected failures across module boundaries.
//
// No exception crosses a module boundary: code that calls a throwing library (JSON, YAML,
// SQLite wrappers) catches there and returns a Status. A broken invariant is a bug and aborts
// (COHORT_CHECK), it is never a Status.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/enum_names.h"

namespace cohort {

// A small closed set; src/api maps each code to one HTTP status.
enum class StatusCode {
  kOk,
  kInvalidArgument,     // the caller's input is wrong (400)
  kNotFound,            // no such job, node, task (404)
  kAlreadyExists,       // (409)
  kFailedPrecondition,  // the object is in the wrong state for this (409)
  kUnavailable,         // a peer cannot be reached; retrying may help (503)
  kDeadlineExceeded,    // a wait ran out of time (504)
  kInternal,            // storage or system failure (500)
  kResourceExhausted,  // the master's disk is full: nothing new is taken until space is freed (507)
  kUnauthenticated,    // no valid token: who is calling is not known (401)
  kPermissionDenied,   // the caller is known and may not do this (403)
  kTooManyRequests,    // the caller must slow down, e.g. after failed logins (429)
};

inline constexpr auto kStatusCodeNames = std::to_array<EnumName<StatusCode>>({
    {StatusCode::kOk, "ok"},
    {StatusCode::kInvalidArgument, "invalid_argument"},
    {StatusCode::kNotFound, "not_found"},
    {StatusCode::kAlreadyExists, "already_exists"},
    {StatusCode::kFailedPrecondition, "failed_precondition"},
    {StatusCode::kUnavailable, "unavailable"},
    {StatusCode::kDeadlineExceeded, "deadline_exceeded"},
    {StatusCode::kInternal, "internal"},
    {StatusCode::kResourceExhausted, "resource_exhausted"},
    {StatusCode::kUnauthenticated, "unauthenticated"},
    {StatusCode::kPermissionDenied, "permission_denied"},
    {StatusCode::kTooManyRequests, "too_many_requests"},
});
// "not_found", as the API's errors say it.
const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message, std::vector<std::string> details = {})
      : code_(code), message_(std::move(message)), details_(std::move(details)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m, std::vector<std::string> details = {}) {
    return Status(StatusCode::kInvalidArgument, std::move(m), std::move(details));
  }
  static Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
  static Status AlreadyExists(std::string m) {
    return Status(StatusCode::kAlreadyExists, std::move(m));
  }
  static Status FailedPrecondition(std::string m) {
    return Status(StatusCode::kFailedPrecondition, std::move(m));
  }
  static Status Unavailable(std::string m) {
    return Status(StatusCode::kUnavailable, std::move(m));
  }
  static Status DeadlineExceeded(std::string m) {
    return Status(StatusCode::kDeadlineExceeded, std::move(m));
  }
  static Status Unauthenticated(std::string m) {
    return Status(StatusCode::kUnauthenticated, std::move(m));
  }
  static Status PermissionDenied(std::string m) {
    return Status(StatusCode::kPermissionDenied, std::move(m));
  }
  static Status TooManyRequests(std::string m) {
    return Status(StatusCode::kTooManyRequests, std::move(m));
  }
  static Status Internal(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
  static Status ResourceExhausted(std::string m) {
    return Status(StatusCode::kResourceExhausted, std::move(m));
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Every individual problem, e.g. one line per invalid field of a job spec.
  const std::vector<std::string>& details() const { return details_; }
  // "invalid_argument: message"
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::vector<std::string> details_;
};

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const T& value) : value_(value) {}             // NOLINT: implicit by design
  StatusOr(T&& value) : value_(std::move(value)) {}       // NOLINT
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) {
      std::fprintf(stderr, "StatusOr constructed from an OK status\n");
      std::abort();
    }
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  const T& value() const& { return Checked(); }
  T& value() & { return Checked(); }
  T&& value() && { return std::move(Checked()); }
  const T& operator*() const& { return Checked(); }
  T& operator*() & { return Checked(); }
  const T* operator->() const { return &Checked(); }
  T* operator->() { return &Checked(); }

 private:
  T& Checked() {
    if (!value_) {
      std::fprintf(stderr, "StatusOr::value() on error: %s\n", status_.ToString().c_str());
      std::abort();
    }
    return *value_;
  }
  const T& Checked() const { return const_cast<StatusOr*>(this)->Checked(); }

  Status status_;
  std::optional<T> value_;
};

}  // namespace cohort

#define COHORT_CONCAT_INNER(a, b) a##b
#define COHORT_CONCAT(a, b) COHORT_CONCAT_INNER(a, b)

#define COHORT_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::cohort::Status cohort_status_ = (expr);        \
    if (!cohort_status_.ok()) return cohort_status_; \
  } while (0)

#define COHORT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#define COHORT_ASSIGN_OR_RETURN(lhs, expr) \
  COHORT_ASSIGN_OR_RETURN_IMPL(COHORT_CONCAT(cohort_statusor_, __LINE__), lhs, expr)

// Invariant checks: a failure is a bug in Cohort, so it aborts with the location.
#define COHORT_CHECK(cond)                                                          \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)
