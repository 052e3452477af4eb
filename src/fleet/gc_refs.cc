// What ki fleet keeps alive in ki gc (ki/gc.h): the runs of every set it
// submitted (fleet.sets), its context blobs (the flashinfer-bench facts a
// node needs, no object references them) and result records; and the
// registration of every module's references (fleet is the top of the
// module map, so this file may name them all).
#include "ki/fleet.h"
#include "ki/gc.h"

namespace ki {
namespace fleet {

void RegisterGcRoots() {
  static GcTableReferences refs({{kSetsTable, 0, true}}, {kContextMediaType, kResultMediaType});
  RegisterGcReferences(&refs);
}

}  // namespace fleet

void RegisterAllGcRoots() {
  catalog::RegisterGcRoots();
  RegisterSignGcRoots();
  run::RegisterGcRoots();
  fib::RegisterGcRoots();
  fleet::RegisterGcRoots();
  RegisterRemoteGcRoots();
}

}  // namespace ki
