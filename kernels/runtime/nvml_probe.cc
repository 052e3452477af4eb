#include "runtime/nvml_probe.h"

#include <dlfcn.h>

#include <mutex>

namespace ki::gpu::internal {
namespace {

// The few NVML entry points ki reads, declared here so that no NVML header
// is needed to build (their C signatures are stable across driver versions).
using NvmlReturn = int;
using NvmlDevice = void*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr unsigned kClockSm = 1, kClockMem = 2;
constexpr unsigned kClockIdAppTarget = 1, kClockIdAppDefault = 2;
constexpr unsigned long long kReasonApplicationsClocksSetting = 0x2ull;

struct Nvml {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*by_pci)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*clock_info)(NvmlDevice, unsigned, unsigned*) = nullptr;
  NvmlReturn (*max_clock_info)(NvmlDevice, unsigned, unsigned*) = nullptr;
  NvmlReturn (*clock)(NvmlDevice, unsigned, unsigned, unsigned*) = nullptr;
  NvmlReturn (*reasons)(NvmlDevice, unsigned long long*) = nullptr;
  NvmlReturn (*temperature)(NvmlDevice, unsigned, unsigned*) = nullptr;
  NvmlReturn (*power)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*driver_version)(char*, unsigned) = nullptr;
  bool ok = false;
};

const Nvml& Load() {
  static Nvml nvml;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    auto sym = [&](const char* a, const char* b = nullptr) {
      void* p = dlsym(h, a);
      return p || !b ? p : dlsym(h, b);
    };
    nvml.init = reinterpret_cast<decltype(nvml.init)>(sym("nvmlInit_v2", "nvmlInit"));
    nvml.by_pci = reinterpret_cast<decltype(nvml.by_pci)>(
        sym("nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId"));
    nvml.clock_info = reinterpret_cast<decltype(nvml.clock_info)>(sym("nvmlDeviceGetClockInfo"));
    nvml.max_clock_info = reinterpret_cast<decltype(nvml.max_clock_info)>(sym("nvmlDeviceGetMaxClockInfo"));
    nvml.clock = reinterpret_cast<decltype(nvml.clock)>(sym("nvmlDeviceGetClock"));
    nvml.reasons = reinterpret_cast<decltype(nvml.reasons)>(
        sym("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"));
    nvml.temperature = reinterpret_cast<decltype(nvml.temperature)>(sym("nvmlDeviceGetTemperature"));
    nvml.power = reinterpret_cast<decltype(nvml.power)>(sym("nvmlDeviceGetPowerUsage"));
    nvml.driver_version = reinterpret_cast<decltype(nvml.driver_version)>(sym("nvmlSystemGetDriverVersion"));
    nvml.ok = nvml.init && nvml.by_pci && nvml.init() == kNvmlSuccess;
  });
  return nvml;
}

}  // namespace

bool NvmlProbe::Open(const std::string& pci_bus_id) {
  const Nvml& n = Load();
  if (!n.ok) return false;
  NvmlDevice dev = nullptr;
  if (n.by_pci(pci_bus_id.c_str(), &dev) != kNvmlSuccess) return false;
  device_ = dev;
  return true;
}

ClockReading NvmlProbe::Read() const {
  ClockReading r;
  const Nvml& n = Load();
  if (!device_ || !n.ok) return r;
  unsigned v = 0;
  if (n.clock_info && n.clock_info(device_, kClockSm, &v) == kNvmlSuccess) r.sm_mhz = v;
  if (n.clock_info && n.clock_info(device_, kClockMem, &v) == kNvmlSuccess) r.mem_mhz = v;
  if (n.max_clock_info && n.max_clock_info(device_, kClockSm, &v) == kNvmlSuccess) r.max_sm_mhz = v;
  if (n.max_clock_info && n.max_clock_info(device_, kClockMem, &v) == kNvmlSuccess) r.max_mem_mhz = v;
  if (n.clock && n.clock(device_, kClockSm, kClockIdAppTarget, &v) == kNvmlSuccess) r.app_sm_mhz = v;
  if (n.clock && n.clock(device_, kClockSm, kClockIdAppDefault, &v) == kNvmlSuccess) r.default_app_sm_mhz = v;
  if (n.temperature && n.temperature(device_, 0, &v) == kNvmlSuccess) r.temperature_c = v;
  if (n.power && n.power(device_, &v) == kNvmlSuccess) r.power_mw = v;
  unsigned long long reasons = 0;
  if (n.reasons && n.reasons(device_, &reasons) == kNvmlSuccess) r.event_reasons = reasons;
  r.valid = true;
  return r;
}

std::string NvmlProbe::DriverVersion() const {
  const Nvml& n = Load();
  char buf[96] = {0};
  if (!n.ok || !n.driver_version || n.driver_version(buf, sizeof(buf)) != kNvmlSuccess) return "";
  return buf;
}

std::string NvmlProbe::ClocksLocked(const ClockReading& r) const {
  if (!r.valid) return "unknown";
  const bool app_moved = r.app_sm_mhz != 0 && r.default_app_sm_mhz != 0 && r.app_sm_mhz != r.default_app_sm_mhz;
  return (app_moved || (r.event_reasons & kReasonApplicationsClocksSetting)) ? "yes" : "no";
}

}  // namespace ki::gpu::internal
