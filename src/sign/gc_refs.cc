// What signing keeps alive in ki gc (ki/gc.h): every attestation envelope
// (by media type, filed or not) and every subject the attestation index
// files one under: a signed statement about an object is evidence about it.
#include "ki/gc.h"
#include "ki/sign.h"

namespace ki {
namespace {

class SignReferences final : public GcReferences {
 public:
  std::vector<std::string_view> Tables() const override { return {kAttestationTable}; }
  bool IsRoot(const ObjectInfo& info) const override {
    return info.type == ObjectType::kBlob && info.media_type == kEnvelopeMediaType;
  }
  Status Roots(Store& store, const std::function<void(const Digest&)>& add) override {
    // subject (32) + envelope (32).
    return store.Scan(kAttestationTable, "", [&](std::string_view k, std::string_view) {
      if (k.size() == 64) {
        add(Digest::FromRaw(k.substr(0, 32)));
        add(Digest::FromRaw(k.substr(32)));
      }
      return true;
    });
  }
};

}  // namespace

void RegisterSignGcRoots() {
  static SignReferences refs;
  RegisterGcReferences(&refs);
}

}  // namespace ki
