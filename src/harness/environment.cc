// Host facts recorded with every result.
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <string>
#include <thread>

#include "ki/env.h"
#include "ki/harness.h"

#ifndef KI_VERSION
#define KI_VERSION "unknown"
#endif

namespace ki::harness {

namespace {

std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<CpuInfo> ReadCpuInfo(Env& env) {
  // Lines are "key<tabs>: value"; a blank line ends a processor's block,
  // so the first line of a key is the first processor's. The value is
  // kept as written after the colon's spaces: the model name is part of
  // the ExecutionEnvironment, whose digest must stay the one earlier runs
  // on this machine recorded.
  KI_ASSIGN_OR_RETURN(std::string text, env.ReadFile("/proc/cpuinfo", 16 << 20));
  CpuInfo info;
  bool model_seen = false, vendor_seen = false;
  std::string_view rest = text;
  while (!rest.empty() && !(model_seen && vendor_seen)) {
    size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 1);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = TrimBlanks(line.substr(0, colon)), value = line.substr(colon + 1);
    value.remove_prefix(std::min(value.find_first_not_of(' '), value.size()));
    if (key == "model name" && !model_seen) {
      info.model_name = value;
      model_seen = true;
    } else if (key == "vendor_id" && !vendor_seen) {
      info.vendor_id = value;
      vendor_seen = true;
    }
  }
  return info;
}

Environment CaptureHostEnvironment() {
  Environment e;
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0) e.host = host;
  // An unreadable cpuinfo leaves both empty: recorded as unknown.
  if (auto cpu = ReadCpuInfo(*Env::Default()); cpu.ok()) {
    e.cpu_model = std::move(cpu->model_name);
    e.cpu_vendor = std::move(cpu->vendor_id);
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
