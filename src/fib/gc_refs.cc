// What ki import flashinfer-bench's tables keep alive in ki gc (ki/gc.h):
// the operations, workloads, solutions' sources and implementations they
// describe, and the definition, reference and workload blobs they name
// (ki run and ki rerun read them; no object references them).
#include "ki/gc.h"

namespace ki::fib {

void RegisterGcRoots() {
  // Names as src/fib/import.cc keeps them (docs/format.md,
  // "flashinfer-bench mapping").
  static GcTableReferences refs({{"fib.operations", 1, true},
                                 {"fib.workloads", 1, true},
                                 {"fib.solutions", 1, true},
                                 {"fib.solution_names", 0, true},
                                 {"fib.traces", 1, true}});
  RegisterGcReferences(&refs);
}

}  // namespace ki::fib
