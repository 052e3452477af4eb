// Element types: sizes, names, and bit-exact bf16/f16 conversions.
#include <cmath>
#include <cstring>

#include "ki/harness.h"

namespace ki::harness {

size_t DtypeSize(ki_dtype dtype) {
  switch (dtype) {
    case KI_DTYPE_BF16:
    case KI_DTYPE_F16: return 2;
    case KI_DTYPE_F32:
    case KI_DTYPE_I32: return 4;
    case KI_DTYPE_F64:
    case KI_DTYPE_I64: return 8;
    case KI_DTYPE_U8:
    case KI_DTYPE_BOOL:
    case KI_DTYPE_F8_E4M3:
    case KI_DTYPE_F8_E5M2: return 1;
    case KI_DTYPE_INVALID: break;
  }
  return 0;
}

namespace {
struct DtypeNameEntry {
  ki_dtype dtype;
  const char* name;
};
// flashinfer-bench's spellings first; the short forms are accepted on input.
constexpr DtypeNameEntry kNames[] = {
    {KI_DTYPE_BF16, "bfloat16"}, {KI_DTYPE_F16, "float16"},     {KI_DTYPE_F32, "float32"},
    {KI_DTYPE_F64, "float64"},   {KI_DTYPE_I32, "int32"},       {KI_DTYPE_I64, "int64"},
    {KI_DTYPE_U8, "uint8"},      {KI_DTYPE_BOOL, "bool"},       {KI_DTYPE_F8_E4M3, "float8_e4m3fn"},
    {KI_DTYPE_F8_E5M2, "float8_e5m2"}, {KI_DTYPE_BF16, "bf16"}, {KI_DTYPE_F16, "fp16"},
    {KI_DTYPE_F32, "fp32"},      {KI_DTYPE_F64, "fp64"},
};
}  // namespace

const char* DtypeName(ki_dtype dtype) {
  for (const auto& n : kNames)
    if (n.dtype == dtype) return n.name;
  return "invalid";
}

ki_dtype ParseDtype(std::string_view name) {
  for (const auto& n : kNames)
    if (name == n.name) return n.dtype;
  return KI_DTYPE_INVALID;
}

float Bf16ToFloat(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t FloatToBf16(float value) {
  uint32_t u;
  std::memcpy(&u, &value, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

float F16ToFloat(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31) v = mant ? NAN : INFINITY;
  else v = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

double ElementAsDouble(ki_dtype dtype, const void* p) {
  switch (dtype) {
    case KI_DTYPE_BF16: { uint16_t b; std::memcpy(&b, p, 2); return Bf16ToFloat(b); }
    case KI_DTYPE_F16: { uint16_t b; std::memcpy(&b, p, 2); return F16ToFloat(b); }
    case KI_DTYPE_F32: { float f; std::memcpy(&f, p, 4); return f; }
    case KI_DTYPE_F64: { double d; std::memcpy(&d, p, 8); return d; }
    case KI_DTYPE_I32: { int32_t i; std::memcpy(&i, p, 4); return i; }
    case KI_DTYPE_I64: { int64_t i; std::memcpy(&i, p, 8); return static_cast<double>(i); }
    case KI_DTYPE_U8:
    case KI_DTYPE_BOOL: return *static_cast<const uint8_t*>(p);
    default: return NAN;
  }
}

}  // namespace ki::harness
