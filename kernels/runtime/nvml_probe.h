// Clocks, throttle reasons and the driver version through NVML, loaded at
// run time (libnvidia-ml.so.1 is absent on machines without a driver).
#pragma once

#include <string>

#include "ki/gpu_backend.h"

namespace ki::gpu::internal {

class NvmlProbe {
 public:
  // Binds to the GPU with this PCI bus id ("0000:3b:00.0"); false when NVML
  // is absent or does not know the device.
  bool Open(const std::string& pci_bus_id);
  bool available() const { return device_ != nullptr; }
  ClockReading Read() const;
  std::string DriverVersion() const;
  // "yes" when applications clocks are set away from their default or the
  // throttle reasons say clocks are pinned by a setting, "no" otherwise,
  // "unknown" without NVML.
  std::string ClocksLocked(const ClockReading& r) const;

 private:
  void* device_ = nullptr;
};

}  // namespace ki::gpu::internal
