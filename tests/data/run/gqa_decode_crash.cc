// Dereferences a null pointer inside run(): runtime_error.
#define KI_TEST_NAME "test.gqa_decode.crash"
#define KI_TEST_CRASH 1
#include "gqa_decode_cpu.h"
