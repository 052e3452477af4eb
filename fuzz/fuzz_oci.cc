// OCI documents from a remote (src/remote/mapping.cc): image manifests,
// image indexes (bundle indexes), pack manifests, bundle parts and referrer
// manifests; and a layout's index.json (src/remote/layout.cc). Any bytes
// give a checked value or an error, never a crash or an escaped exception.
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "fuzz.h"
#include "ki/env.h"
#include "remote/mapping.h"
#include "remote/target.h"

namespace {

// A layout whose index.json is the input, in a directory made once.
// Made once and never destroyed (the atexit handler still needs it).
const std::string& LayoutDir() {
  static const std::string* dir = [] {
    char tmpl[] = "/tmp/ki-fuzz-oci-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    if (!d) ki::fuzz::Die("mkdtemp");
    auto* s = new std::string(d);
    ki::Env* env = ki::Env::Default();
    (void)env->CreateDirs(*s + "/blobs/sha256");
    (void)env->WriteFileAtomic(*s + "/oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}", ki::Durability::kNone);
    std::atexit([] { (void)ki::Env::Default()->RemoveTree(LayoutDir()); });
    return s;
  }();
  return *dir;
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
  const std::string dir = LayoutDir();
  if (!Env::Default()->WriteFileAtomic(dir + "/index.json", bytes, Durability::kNone).ok()) return 0;
  auto url = ParseRemoteUrl("oci-layout:" + dir, false);
  if (!url.ok()) fuzz::Die("layout url", url.status().message());
  auto target = OpenLayout(*url, opts, Access::kPull);
  if (!target.ok()) return 0;
  auto conn = (*target)->Connect();
  if (!conn.ok()) return 0;
  (void)(*conn)->ResolveTag("latest");
  (void)(*conn)->ListTags();
  return 0;
}
