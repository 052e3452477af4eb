// DSSE envelopes and in-toto statements (src/sign): any bytes give an
// envelope or an InvalidInput, and CheckEnvelope reports on any envelope
// without crashing or throwing (its JSON reads are all type-checked).
#include "fuzz.h"
#include "ki/sign.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ki;
  std::string_view bytes = fuzz::Bytes(data, size);
  auto env = ParseEnvelope(bytes);
  if (!env.ok()) KI_FUZZ_CHECK(env.status().IsInvalidInput(), env.status().message());
  static const KeySources kNoKeys;
  const Digest subject = Sha256Of("subject");
  AttestationReport r = CheckEnvelope(bytes, Sha256Of(bytes), subject, kNoKeys);
  (void)r.ToJson().dump();
  (void)r.problem();
  return 0;
}
