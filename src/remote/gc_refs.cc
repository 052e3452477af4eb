// Remotes in ki gc (ki/gc.h): remote.config and remote.state keep nothing
// alive. The state says what a remote holds, not what this store needs
// (docs/format.md, "Remote state"); a push after gc reads objects from the
// store, never from the state.
#include "ki/gc.h"
#include "ki/remote.h"

namespace ki {

void RegisterRemoteGcRoots() {
  static GcTableReferences refs({{kRemoteConfigTable, 0, false}, {kRemoteStateTable, 0, false}});
  RegisterGcReferences(&refs);
}

}  // namespace ki
