// Never returns from run(): timeout.
#define KI_TEST_NAME "test.gqa_decode.hang"
#define KI_TEST_HANG 1
#include "gqa_decode_cpu.h"
