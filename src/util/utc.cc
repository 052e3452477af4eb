#include "ki/utc.h"

#include <cstdio>
#include <ctime>

namespace ki {

std::string UtcText(std::chrono::system_clock::time_point t, UtcForm form) {
  using namespace std::chrono;
  // Floor, not truncation toward zero: a time before 1970 keeps its second.
  const auto secs = floor<seconds>(t);
  const long ms = long(duration_cast<milliseconds>(t - secs).count());
  const std::time_t tt = system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[96];  // room for any int fields, so no truncation warning
  const int y = tm.tm_year + 1900, mo = tm.tm_mon + 1;
  switch (form) {
    case UtcForm::kSeconds:
      std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", y, mo, tm.tm_mday, tm.tm_hour, tm.tm_min,
                    tm.tm_sec);
      break;
    case UtcForm::kMillis:
      std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", y, mo, tm.tm_mday, tm.tm_hour,
                    tm.tm_min, tm.tm_sec, ms);
      break;
    case UtcForm::kCompact:
      std::snprintf(buf, sizeof buf, "%04d%02d%02dT%02d%02d%02dZ", y, mo, tm.tm_mday, tm.tm_hour, tm.tm_min,
                    tm.tm_sec);
      break;
  }
  return buf;
}

std::string UtcText(int64_t unix_seconds, UtcForm form) {
  return UtcText(std::chrono::system_clock::time_point(std::chrono::seconds(unix_seconds)), form);
}

std::string UtcNow(UtcForm form) { return UtcText(std::chrono::system_clock::now(), form); }

}  // namespace ki
