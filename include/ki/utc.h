// Times of day as UTC text: the one place ki turns a clock reading into the
// strings its records, tables and file names carry, so that every field
// called "...At" has the same form.
//
// Thread-safety: pure functions (gmtime_r).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ki {

enum class UtcForm {
  kSeconds,  // RFC 3339, "2026-12-01T23:30:05Z": manifests, attestations, listings
  kMillis,   // RFC 3339 with milliseconds, "2026-12-01T23:30:05.123Z": records
             // where two events can fall in one second (run observedAt, fleet)
  kCompact,  // ISO 8601 basic, "20261201T233005Z": part of a file name
};

std::string UtcText(std::chrono::system_clock::time_point t, UtcForm form = UtcForm::kSeconds);

// The same of a count of seconds since 1970-01-01T00:00:00Z (what the
// store records as an object's first-added time).
std::string UtcText(int64_t unix_seconds, UtcForm form = UtcForm::kSeconds);

// UtcText of the system clock now.
std::string UtcNow(UtcForm form = UtcForm::kSeconds);

}  // namespace ki
