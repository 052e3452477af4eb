#define KI_TEST_NAME "test.gqa_decode.cpu"
#include "gqa_decode_cpu.h"
