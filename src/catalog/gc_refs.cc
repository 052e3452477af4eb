// What the catalog keeps alive in ki gc (ki/gc.h): every import object (the
// record of an import; ki rank names the imports that skipped lines), what
// catalog objects name (an import its facts objects, a facts object its
// run), and the facts objects about every kept run (ranking, records and
// evidence read them), as push carries them (src/remote/mapping.cc).
#include "catalog/tables.h"
#include "ki/catalog.h"
#include "ki/gc.h"

namespace ki::catalog {
namespace {

class CatalogReferences final : public GcReferences {
 public:
  std::vector<std::string_view> Tables() const override {
    // All derived (the group index): their entries come from the objects.
    // catalog.rows is format 1's, emptied by the upgrade.
    return {tables::kRuns,  tables::kCohortRuns, tables::kCohorts,      tables::kEvents, tables::kRanks,
            tables::kImports, tables::kFacts,    tables::kSupersededBy, tables::kIds,    tables::kPending,
            "catalog.rows"};
  }
  bool IsRoot(const ObjectInfo& info) const override {
    return info.type == ObjectType::kBlob && info.media_type == kImportMediaType;
  }
  Status Edges(Store& store, const ObjectInfo& reached,
               const std::function<void(const Digest&, std::string_view)>& add) override {
    std::vector<Digest> named, facts;
    KI_RETURN_IF_ERROR(ObjectsNamedBy(store, reached, &named));
    for (const Digest& d : named) add(d, reached.media_type == kFactsMediaType ? "facts subject" : "import facts");
    KI_RETURN_IF_ERROR(FactsAbout(store, reached.digest, &facts));
    for (const Digest& d : facts) add(d, "catalog facts");
    return Status::OK();
  }
};

}  // namespace

void RegisterGcRoots() {
  static CatalogReferences refs;
  RegisterGcReferences(&refs);
}

}  // namespace ki::catalog
