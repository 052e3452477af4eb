// A counter-based random generator shared by host and device code.
//
// Every value is a pure function of (seed, stream, index), computed with
// integer arithmetic only, so the CPU and any GPU produce the same bytes for
// the same (workload, seed) in any order and with any parallelism. Floating
// values are built bit by bit (sign, exponent, mantissa) instead of through
// float arithmetic, which a compiler may contract differently on each side.
//
// Random floats have magnitudes in [1/16, 1) and a random sign: never zero,
// never subnormal, the same spread of scales that normal data of unit
// variance puts into attention logits.
//
// Thread-safety: pure functions.
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define KI_HD __host__ __device__ __forceinline__
#else
#define KI_HD inline
#endif

namespace ki::rng {

// splitmix64's finaliser: a bijection of 64-bit words with good avalanche.
KI_HD uint64_t Mix64(uint64_t z) {
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ull;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z;
}

// A key for one tensor (stream) of one seed.
KI_HD uint64_t StreamKey(uint64_t seed, uint64_t stream) {
  return Mix64(Mix64(seed ^ 0x6a09e667f3bcc909ull) + stream * 0x9e3779b97f4a7c15ull);
}

// The index-th 64 random bits of a stream.
KI_HD uint64_t Bits(uint64_t key, uint64_t index) {
  return Mix64(key + (index + 1) * 0x9e3779b97f4a7c15ull);
}

// bfloat16 bit pattern: sign, exponent 123..126 (2^-4 .. 2^-1), 7 mantissa bits.
KI_HD uint16_t Bf16Bits(uint64_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits >> 63);
  const uint32_t exp = 123u + static_cast<uint32_t>((bits >> 8) & 3u);
  const uint32_t mant = static_cast<uint32_t>((bits >> 10) & 0x7fu);
  return static_cast<uint16_t>((sign << 15) | (exp << 7) | mant);
}

// float16 bit pattern: exponent 11..14 (bias 15), 10 mantissa bits.
KI_HD uint16_t F16Bits(uint64_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits >> 63);
  const uint32_t exp = 11u + static_cast<uint32_t>((bits >> 8) & 3u);
  const uint32_t mant = static_cast<uint32_t>((bits >> 10) & 0x3ffu);
  return static_cast<uint16_t>((sign << 15) | (exp << 10) | mant);
}

// float32 bit pattern: exponent 123..126, 23 mantissa bits.
KI_HD uint32_t F32Bits(uint64_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits >> 63);
  const uint32_t exp = 123u + static_cast<uint32_t>((bits >> 8) & 3u);
  const uint32_t mant = static_cast<uint32_t>((bits >> 10) & 0x7fffffu);
  return (sign << 31) | (exp << 23) | mant;
}

// A uniform integer in [0, n) (n > 0), by multiply-high (Lemire); the bias is
// below 2^-32 for the sizes ki uses and the result is the same everywhere.
#if !defined(__CUDA_ARCH__)
__extension__ typedef unsigned __int128 U128;  // GCC/Clang extension; quiet under -Wpedantic
#endif
KI_HD uint64_t Below(uint64_t bits, uint64_t n) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(bits, n);
#else
  return static_cast<uint64_t>((static_cast<U128>(bits) * n) >> 64);
#endif
}

}  // namespace ki::rng
