// What every fuzz target shares: libFuzzer's entry point, and helpers that
// turn a finding into a crash libFuzzer records (an assertion that holds for
// every input, a wrong answer, an exception that escaped a Status boundary).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace ki::fuzz {

inline std::string_view Bytes(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void Die(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "fuzz: %s %.*s\n", what, int(detail.size() > 2000 ? 2000 : detail.size()), detail.data());
  std::abort();
}

#define KI_FUZZ_CHECK(cond, detail) \
  do {                              \
    if (!(cond)) ::ki::fuzz::Die("check failed: " #cond, detail); \
  } while (0)

}  // namespace ki::fuzz
