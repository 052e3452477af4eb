// Writes every output 1.5 times too large: incorrect_numerical.
#define KI_TEST_NAME "test.gqa_decode.wrong"
#define KI_TEST_SCALE 1.5f
#include "gqa_decode_cpu.h"
