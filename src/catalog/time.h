// RFC 3339 timestamps as the export writes them ("2026-03-14T23:56:12.645Z",
// "2025-09-04T19:30:14Z", offsets allowed), compared as instants.
#pragma once

#include <string_view>

namespace ki::catalog {

// Seconds since 1970-01-01T00:00:00Z; NaN when `s` is not a timestamp.
double ParseTime(std::string_view s);
// -1, 0 or 1 as instants; texts that are not timestamps compare as strings.
int CompareTimes(std::string_view a, std::string_view b);

}  // namespace ki::catalog
