// What ki run's tables keep alive in ki gc (ki/gc.h): every run, rerun and
// original they name, and the digests their values name (samples, log).
#include "ki/gc.h"
#include "run/records.h"

namespace ki::run {

void RegisterGcRoots() {
  static GcTableReferences refs({{internal::kRunsTable, 1, true},
                                 {internal::kRerunsTable, 2, false},
                                 {internal::kOriginalTable, 1, true},
                                 {internal::kVerdictsTable, 1, true}});
  RegisterGcReferences(&refs);
}

}  // namespace ki::run
