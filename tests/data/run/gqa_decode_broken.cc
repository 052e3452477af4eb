// Does not compile: compile_error.
#include "ki/kernel_abi.h"
int32_t Run(const ki_call* call) { return call->no_such_field; }
