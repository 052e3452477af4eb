// Host facts recorded with every result.
#include <unistd.h>

#include <ctime>
#include <sstream>
#include <string>
#include <thread>

#include "ki/env.h"
#include "ki/harness.h"

#ifndef KI_VERSION
#define KI_VERSION "unknown"
#endif

namespace ki::harness {

Environment CaptureHostEnvironment() {
  Environment e;
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0) e.host = host;
  // Through Env (as all file reads); a missing file reads as empty.
  auto text = Env::Default()->ReadFile("/proc/cpuinfo", 16 << 20);
  std::istringstream cpuinfo(text.ok() ? *text : std::string());
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) e.cpu_model = line.substr(line.find_first_not_of(' ', colon + 1));
      break;
    }
  }
  e.cpu_count = static_cast<int>(std::thread::hardware_concurrency());
  e.ki_version = KI_VERSION;
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  e.captured_at = buf;
  return e;
}

}  // namespace ki::harness
