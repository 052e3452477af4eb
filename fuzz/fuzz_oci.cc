// OCI documents from a remote (src/remote/mapping.cc): image manifests,
// image indexes (bundle indexes), pack manifests, bundle parts and referrer
// manifests; and a layout's index.json (src/remote/layout.cc), read through
// an in-memory Env (no file written per execution). Any bytes give a
// checked value or an error, never a crash or an escaped exception.
#include <string>

#include "fuzz.h"
#include "ki/env.h"
#include "memory_env.h"
#include "remote/mapping.h"
#include "remote/target.h"

namespace {

// A layout whose index.json is the input.
constexpr const char* kLayout = "/fuzz/layout";

ki::fuzz::MemoryEnv* LayoutEnv() {
  static ki::fuzz::MemoryEnv* env = [] {  // never destroyed: no exit-time order to mind
    auto* e = new ki::fuzz::MemoryEnv;
    e->AddDir(kLayout);
    e->AddDir(std::string(kLayout) + "/blobs");
    e->AddDir(std::string(kLayout) + "/blobs/sha256");
    e->Put(std::string(kLayout) + "/oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}");
    return e;
  }();
  return env;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ki;
  using namespace ki::remote;
  std::string_view bytes = fuzz::Bytes(data, size);
  TransferOptions opts;
  const Digest subject = Sha256Of("subject");
  for (std::string_view type : {std::string_view(""), std::string_view("application/vnd.oci.image.manifest.v1+json"),
                                std::string_view("application/vnd.oci.image.index.v1+json")}) {
    (void)ParseImageManifest(bytes, type, opts);
    (void)ParseBundleIndex(bytes, type, opts);
    (void)ParsePackManifest(bytes, type, opts);
    (void)ParseBundlePart(bytes, type, opts);
    (void)ParseAttestationManifest(bytes, type, subject, opts);
  }
  fuzz::MemoryEnv* env = LayoutEnv();
  env->Put(std::string(kLayout) + "/index.json", std::string(bytes));
  static const auto url = ParseRemoteUrl(std::string("oci-layout:") + kLayout, false);
  if (!url.ok()) fuzz::Die("layout url", url.status().message());
  auto target = OpenLayout(*url, opts, Access::kPull, *env);
  if (!target.ok()) return 0;
  auto conn = (*target)->Connect();
  if (!conn.ok()) return 0;
  (void)(*conn)->ResolveTag("latest");
  (void)(*conn)->ListTags();
  return 0;
}
