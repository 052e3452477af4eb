// A plain C++ GQA paged decode through ki's kernel ABI, for the CPU path of
// `ki run` in tests. fp32 accumulation, base-2 lse, empty sequences give 0
// and -inf. Test variants define, before including this file:
//   KI_TEST_NAME   the kernel's name in its table
//   KI_TEST_SCALE  a factor applied to the output (1 is correct)
//   KI_TEST_CRASH  dereference a null pointer
//   KI_TEST_HANG   never return
//   KI_TEST_NOISY_BYTES  print about that many bytes of lines to stderr, once
//   KI_TEST_PACE_US  return no sooner than this many µs after the call began
//                    (times $KI_TEST_PACE_FACTOR when set: a slower machine),
//                    so that its timing holds on a loaded machine
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#ifdef KI_TEST_PACE_US
#include <stdlib.h>
#include <time.h>
#endif

#include <string>
#include <vector>

#include "ki/gqa_paged_decode.h"
#include "ki/kernel_abi.h"

#ifndef KI_TEST_SCALE
#define KI_TEST_SCALE 1.0f
#endif

namespace {

float Bf16(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

uint16_t ToBf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return uint16_t(u >> 16);
}

int32_t Compute(const ki_call* call);

#ifdef KI_TEST_PACE_US
// Sleeps to an absolute deadline: the time a call takes is the pace, not
// the load of the machine (a sleep's wake-up is late by microseconds).
int32_t Run(const ki_call* call) {
  static const double factor = [] {
    const char* f = getenv("KI_TEST_PACE_FACTOR");
    return f && *f ? atof(f) : 1.0;
  }();
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  int32_t rc = Compute(call);
  const long long ns = (long long)(KI_TEST_PACE_US * 1000.0 * factor) + t.tv_nsec;
  t.tv_sec += time_t(ns / 1000000000);
  t.tv_nsec = long(ns % 1000000000);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr) != 0) {
  }
  return rc;
}
#else
int32_t Run(const ki_call* call) { return Compute(call); }
#endif

int32_t Compute(const ki_call* call) {
  using namespace ki::gqa;
  Args a;
  if (int32_t rc = Unpack(call, KI_DEVICE_CPU, &a); rc != KI_OK) return rc;
#ifdef KI_TEST_CRASH
  volatile int* p = nullptr;
  *p = 1;
#endif
#ifdef KI_TEST_NOISY_BYTES
  static bool printed = false;
  if (!printed) {
    printed = true;
    std::string block;  // 1 MiB of 64-byte lines, written whole (stderr is unbuffered)
    while (block.size() < (1u << 20)) block += "noisy: ..........................................................\n";
    fputs("noisy: first line\n", stderr);
    for (long n = 0; n < (KI_TEST_NOISY_BYTES); n += long(block.size())) fwrite(block.data(), 1, block.size(), stderr);
    fputs("noisy: last line\n", stderr);
  }
#endif
#ifdef KI_TEST_HANG
  for (volatile int spin = 0;; spin = spin + 1) {
  }
#endif
  const uint16_t* q = static_cast<const uint16_t*>(a.q);
  const uint16_t* k = static_cast<const uint16_t*>(a.k_cache);
  const uint16_t* v = static_cast<const uint16_t*>(a.v_cache);
  uint16_t* out = static_cast<uint16_t*>(a.out);
  const float log2e = 1.4426950408889634f;
  std::vector<float> logits, acc(kHeadDim);
  for (int64_t b = 0; b < a.batch; ++b) {
    const int32_t begin = a.kv_indptr[b], end = a.kv_indptr[b + 1];
    for (int h = 0; h < kNumQoHeads; ++h) {
      const int kvh = h / kGroup;
      const uint16_t* qh = q + (b * kNumQoHeads + h) * kHeadDim;
      logits.assign(size_t(end - begin), 0.f);
      float mx = -INFINITY;
      for (int32_t t = begin; t < end; ++t) {
        const uint16_t* kr = k + (int64_t(a.kv_indices[t]) * kNumKvHeads + kvh) * kHeadDim;
        float s = 0.f;
        for (int d = 0; d < kHeadDim; ++d) s += Bf16(qh[d]) * Bf16(kr[d]);
        s *= a.sm_scale * log2e;
        logits[size_t(t - begin)] = s;
        mx = s > mx ? s : mx;
      }
      float sum = 0.f;
      acc.assign(kHeadDim, 0.f);
      for (int32_t t = begin; t < end; ++t) {
        const float p = exp2f(logits[size_t(t - begin)] - mx);
        sum += p;
        const uint16_t* vr = v + (int64_t(a.kv_indices[t]) * kNumKvHeads + kvh) * kHeadDim;
        for (int d = 0; d < kHeadDim; ++d) acc[d] += p * Bf16(vr[d]);
      }
      uint16_t* o = out + (b * kNumQoHeads + h) * kHeadDim;
      for (int d = 0; d < kHeadDim; ++d) o[d] = ToBf16(sum > 0 ? KI_TEST_SCALE * acc[d] / sum : 0.f);
      a.lse[b * kNumQoHeads + h] = sum > 0 ? mx + log2f(sum) : -INFINITY;
    }
  }
  return KI_OK;
}

const ki_kernel kKernel = {
    {KI_ABI_VERSION, KI_DEVICE_CPU, KI_TEST_NAME, "gqa_paged_decode_h32_kv4_d128_ps1", "test kernel for ki run"},
    nullptr, Run};

}  // namespace

extern "C" __attribute__((visibility("default"))) const ki_kernel* ki_kernel_get(uint32_t abi_version, int32_t index) {
  return abi_version == KI_ABI_VERSION && index == 0 ? &kKernel : nullptr;
}
