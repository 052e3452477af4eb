// Kernel device spans from CUPTI activity records, with CUPTI loaded at run
// time (dlopen), so ki has no link-time dependency on it and runs without it.
#pragma once

#include <stdint.h>

#include <string>
#include <vector>

namespace ki::gpu::internal {

struct KernelSpan {
  std::string name;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

class CuptiTrace {
 public:
  // The process's trace, or nullptr (and *why) when CUPTI cannot be used.
  static CuptiTrace* Get(std::string* why);
  // Starts collecting concurrent-kernel records (anything collected before is dropped).
  bool Start(std::string* why);
  // Flushes, stops and returns the records collected since Start, in start order.
  bool Stop(std::vector<KernelSpan>* spans, std::string* why);
};

}  // namespace ki::gpu::internal
