// Remotes in ki gc (ki/gc.h): remote.config and remote.state keep nothing
// alive. The state says what a remote holds, not what this store needs
// (docs/format.md, "Remote state"); a push after gc reads objects from the
// store, never from the state. Its rows of unchanged pushes ('u') hold a
// store generation, which gc's compaction restarts: gc drops them, so a
// later push cannot take a new generation for the old one.
#include "ki/gc.h"
#include "ki/remote.h"

namespace ki {
namespace {

class RemoteReferences final : public GcReferences {
 public:
  std::vector<std::string_view> Tables() const override { return {kRemoteConfigTable, kRemoteStateTable}; }
  Status BeforeCompaction(Batch& batch) override {
    // Rows: an 8-byte registry prefix, then the row type (src/remote/state.h).
    std::vector<std::string> unchanged;
    KI_RETURN_IF_ERROR(batch.Scan(kRemoteStateTable, "", [&](std::string_view k, std::string_view) {
      if (k.size() > 8 && k[8] == 'u') unchanged.emplace_back(k);
      return true;
    }));
    for (const auto& k : unchanged) KI_RETURN_IF_ERROR(batch.Delete(kRemoteStateTable, k));
    return Status::OK();
  }
};

}  // namespace

void RegisterRemoteGcRoots() {
  static RemoteReferences refs;
  RegisterGcReferences(&refs);
}

}  // namespace ki
