// Prints 300 MiB on its first call: past the 256 MiB a run child may write,
// so it is killed by SIGXFSZ (runtime_error) instead of filling the disk.
#define KI_TEST_NAME "test.gqa_decode.flood"
#define KI_TEST_NOISY_BYTES (300l << 20)
#include "gqa_decode_cpu.h"
