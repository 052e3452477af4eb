// Computes correctly and takes 20 ms a call (far above its compute time, even on a loaded machine) (times $KI_TEST_PACE_FACTOR):
// a kernel whose number holds on a loaded machine, for the fleet test's
// verdicts (tests/cli/fleet_slurm.sh).
#define KI_TEST_NAME "test.gqa_decode.paced"
#define KI_TEST_PACE_US 20000
#include "gqa_decode_cpu.h"
