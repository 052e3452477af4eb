// Prints 20 MiB on its first call, then computes correctly: its log blob
// keeps the head and the tail of that output (16 MiB in all), not nothing.
#define KI_TEST_NAME "test.gqa_decode.noisy"
#define KI_TEST_NOISY_BYTES (20l << 20)
#include "gqa_decode_cpu.h"
