// Quantities written by people: memory sizes ("512Mi", "32Gi"), CPU amounts ("4", "0.5", "500m")
// and durations ("90m", "2h", "1h30m"). Parse errors state the reason and a valid example; the
// caller prefixes the field name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/time.h"

namespace cohort {

// Kubernetes quantity syntax for bytes: a plain integer, decimal suffixes k M G T P (powers of
// 1000) or binary suffixes Ki Mi Gi Ti Pi (powers of 1024). Fractions are allowed with a suffix
// ("1.5Gi") when they come out as whole bytes.
StatusOr<int64_t> ParseByteSize(std::string_view text);
// The shortest exact binary form: 34359738368 -> "32Gi", 1000 -> "1000".
std::string FormatByteSize(int64_t bytes);
// For people: at most one decimal, binary units: 25273950208 -> "23.5Gi".
std::string FormatByteSizeApprox(int64_t bytes);

// CPUs in thousandths: "2" -> 2000, "0.5" -> 500, "250m" -> 250.
StatusOr<int64_t> ParseMilliCpus(std::string_view text);
std::string FormatMilliCpus(int64_t milli);
// A number of CPUs as JSON carries it (a double), in thousandths, rounded to the nearest; nothing
// for a value that is not finite or beyond 1e12 CPUs either way, which a cast would overflow.
std::optional<int64_t> MilliCpusFromNumber(double cpus);

// A sequence of <number><unit> with units d h m s ms us: "90m", "1h30m", "45s", "500ms", "2d",
// "1s250us"; to the nearest microsecond.
StatusOr<Duration> ParseDuration(std::string_view text);
// "1h30m", "45s", "250ms", "0s".
std::string FormatDuration(Duration d);

// A moment as people write it on a command line: a UTC date ("2026-11-01", its midnight), an
// RFC 3339 time ("2026-11-01T08:00:00Z", "2026-11-01T10:00:00+02:00"), "now", or how long
// before `now` ("7d", "36h", "7d ago"). Never before the epoch.
StatusOr<Timestamp> ParseTimeSpec(std::string_view text, Timestamp now);

}  // namespace cohort
