// Host facts recorded with every result.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ki/env.h"
#include "ki/harness.h"
#include "ki/utc.h"

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

namespace {

// A whole decimal number, or nullopt ("max", garbage, overflow).
std::optional<uint64_t> ParseCount(std::string_view s) {
  s = TrimBlanks(s);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

Result<uint64_t> AvailableHostMemory(Env& env) {
  KI_ASSIGN_OR_RETURN(std::string meminfo, env.ReadFile("/proc/meminfo", 1 << 20));
  std::optional<uint64_t> avail;
  std::string_view rest = meminfo;
  while (!rest.empty()) {
    size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 1);
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    line.remove_prefix(13);
    if (line.size() >= 3 && line.substr(line.size() - 3) == " kB") line.remove_suffix(3);
    if (auto kb = ParseCount(line); kb && *kb <= UINT64_MAX / 1024) avail = *kb * 1024;
    break;
  }
  if (!avail) return Status::InvalidInput("/proc/meminfo: no MemAvailable line ki can read");
  // A container's limit is its cgroup's, which MemAvailable, the whole
  // machine's, does not show: v2's memory.max less memory.current, or v1's
  // memory.limit_in_bytes less memory.usage_in_bytes, at the process's
  // cgroup or any above it. Files that are absent or unreadable: no limit
  // known there.
  struct Hierarchy {
    std::string root, path;
    const char* limit;
    const char* usage;
  };
  std::vector<Hierarchy> cgroups;
  if (auto text = env.ReadFile("/proc/self/cgroup", 1 << 20); text.ok()) {
    for (std::string_view r = *text; !r.empty();) {
      size_t eol = r.find('\n');
      std::string_view line = r.substr(0, eol);
      r.remove_prefix(eol == std::string_view::npos ? r.size() : eol + 1);
      const size_t a = line.find(':'), b = a == std::string_view::npos ? a : line.find(':', a + 1);
      if (b == std::string_view::npos) continue;
      const std::string_view controllers = line.substr(a + 1, b - a - 1);
      const std::string path(line.substr(b + 1));
      if (line.substr(0, a) == "0" && controllers.empty())
        cgroups.push_back({"/sys/fs/cgroup", path, "memory.max", "memory.current"});
      else if (controllers == "memory")
        cgroups.push_back({"/sys/fs/cgroup/memory", path, "memory.limit_in_bytes", "memory.usage_in_bytes"});
    }
  }
  for (const Hierarchy& h : cgroups) {
    for (std::string dir = h.path;; dir = dir.substr(0, dir.rfind('/'))) {
      const std::string base = h.root + (dir == "/" ? std::string() : dir);
      auto max = env.ReadFile(base + "/" + h.limit, 4096);
      auto cur = env.ReadFile(base + "/" + h.usage, 4096);
      if (max.ok() && cur.ok()) {
        auto m = ParseCount(*max), c = ParseCount(*cur);
        if (m && c) avail = std::min(*avail, *m > *c ? *m - *c : 0);
      }
      if (dir.empty() || dir == "/" || dir.find('/') == std::string::npos) break;
    }
  }
  return *avail;
}

Environment CaptureHostEnvironment() {
  Environment e;
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0) e.host = host;
  // An unreadable cpuinfo leaves both empty: recorded as unknown. The
  // process's Env, as for /proc/meminfo (runner.cc): a fact of the machine;
  // tests fake it through ReadCpuInfo's Env.
  if (auto cpu = ReadCpuInfo(*Env::Default()); cpu.ok()) {
    e.cpu_model = std::move(cpu->model_name);
    e.cpu_vendor = std::move(cpu->vendor_id);
  }
  e.cpu_count = static_cast<int>(std::thread::hardware_concurrency());
  e.ki_version = KI_VERSION;
  e.captured_at = UtcNow();
  return e;
}

}  // namespace ki::harness
