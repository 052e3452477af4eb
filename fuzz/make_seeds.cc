// Writes the seeds that tests/data has no file for: object frames, OCI
// documents as ki writes them, and a signed DSSE envelope. Run by the build
// (fuzz/CMakeLists.txt) into the corpus directories, so the seeds follow
// the formats as they change. Usage: make_seeds CORPUS_ROOT
#include <cstdio>
#include <string>

#include "ki/env.h"
#include "ki/sign.h"
#include "ki/json.h"
#include "catalog/compact_json.h"
#include "odb/frame.h"
#include "remote/mapping.h"

namespace {

using namespace ki;
using remote::Closure;
using remote::Layer;
using RemoteRole = remote::Role;

void Write(const std::string& path, std::string_view bytes) {
  Status s = Env::Default()->WriteFileAtomic(path, bytes, Durability::kNone);
  if (!s.ok()) {
    std::fprintf(stderr, "make_seeds: %s\n", s.message().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string root = argv[1];
  Env* env = Env::Default();
  for (const char* t : {"frame", "oci", "dsse", "compact"}) (void)env->CreateDirs(root + "/" + t);

  // Frames: a small blob (raw), a compressible one (zstd), a manifest, empty.
  const std::string text(3000, 'k');
  Write(root + "/frame/blob-raw", odb::EncodeFrame(ObjectType::kBlob, 0, "text/plain", "hello", 3));
  Write(root + "/frame/blob-zstd", odb::EncodeFrame(ObjectType::kBlob, 0, "text/plain; charset=utf-8", text, 3));
  Write(root + "/frame/manifest",
        odb::EncodeFrame(ObjectType::kManifest, 1, "application/vnd.kernelindex.manifest+json",
                         "{\"apiVersion\":\"kernelindex.dev/v1alpha1\",\"kind\":\"SoftwareProject\"}", 3));
  Write(root + "/frame/empty", odb::EncodeFrame(ObjectType::kBlob, 0, "application/octet-stream", "", 3));
  // The same in versions 2 to 4 (what stores before format 13 hold; read as ever).
  Write(root + "/frame/legacy-blob-zstd", odb::EncodeFrame(ObjectType::kBlob, 0, "text/plain; charset=utf-8", text, 3,
                                                           nullptr, odb::FrameLayout::kLegacy));
  Write(root + "/frame/legacy-manifest",
        odb::EncodeFrame(ObjectType::kManifest, 1, "application/vnd.kernelindex.manifest+json",
                         "{\"apiVersion\":\"kernelindex.dev/v1alpha1\",\"kind\":\"SoftwareProject\"}", 3, nullptr,
                         odb::FrameLayout::kLegacy));

  // Catalog values in the binary form: a cohort-like and an event-like tree
  // with the strings it shortens (a digest, a row id, a timestamp).
  const std::string digest = Sha256Of("cohort").str();
  Write(root + "/compact/cohort",
        catalog::tables::EncodeCompactJson(Json{{"kind", "kernel"}, {"operation", digest}, {"workload", digest},
                                                 {"sourceNative", true}, {"runs", 3},
                                                 {"metric", Json::array({"latency", "mean", "ns"})}}));
  Write(root + "/compact/event",
        catalog::tables::EncodeCompactJson(Json{{"comparisonKey", digest},
                                                 {"id", "0b7f6c1e-3d2a-4f5b-9c8d-7e6f5a4b3c2d"},
                                                 {"at", "2025-10-16T01:25:11.078Z"}, {"value", 18.1},
                                                 {"n", nullptr}, {"neg", -7}}));

  // OCI: an image manifest of a small closure, its referrer, a bundle
  // index with a pack manifest, and a layout's index.json.
  Closure c;
  c.root = Sha256Of("root");
  c.name = "BenchmarkRun/r";
  c.root_kind = Kind::kBenchmarkRun;
  Layer root_layer;
  root_layer.digest = c.root;
  root_layer.size = 4;
  root_layer.role = RemoteRole::kManifest;
  root_layer.media_type = "application/vnd.kernelindex.manifest+json";
  root_layer.kind = Kind::kBenchmarkRun;
  c.layers.push_back(root_layer);
  Layer blob;
  blob.digest = Sha256Of("blob");
  blob.size = 4;
  blob.role = RemoteRole::kBlob;
  blob.media_type = "text/plain";
  blob.title = "log.txt";
  c.layers.push_back(blob);
  const std::string image = remote::ImageManifest(c);
  Write(root + "/oci/image-manifest.json", image);
  Layer att;
  att.digest = Sha256Of("envelope");
  att.size = 8;
  att.role = RemoteRole::kAttestation;
  att.media_type = std::string(kEnvelopeMediaType);
  att.subject = c.root;
  Write(root + "/oci/attestation-manifest.json", remote::AttestationManifest(att, Sha256Of(image), image.size()));
  const std::string pack = remote::PackManifest(Sha256Of("pack"), 1000, 3);
  Write(root + "/oci/pack-manifest.json", pack);
  Write(root + "/oci/bundle-index.json", remote::BundleIndex({image}, 1, &pack));
  Write(root + "/oci/index.json",
        "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":[{"
        "\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" +
            Sha256Of(image).str() + "\",\"size\":" + std::to_string(image.size()) +
            ",\"annotations\":{\"org.opencontainers.image.ref.name\":\"latest\"}}]}");

  // DSSE: a reviewed statement about the blob "subject" (the subject the
  // fuzz target checks against), signed by a fresh key, as BuildAttestation
  // writes one (without a store to hold the subject).
  SigningKey key = SigningKey::Generate("seed");
  Json statement = {
      {"_type", kInTotoStatementType},
      {"subject", Json::array({{{"name", "blob"}, {"digest", {{"sha256", Sha256Of("subject").hex()}}}}})},
      {"predicateType", "https://kernelindex.dev/ki/attestation/reviewed/v1"},
      {"predicate",
       {{"signer", {{"keyid", key.public_key().KeyId()}, {"publicKey", key.public_key().ToString()}, {"name", "seed"}}},
        {"signedAt", "2026-12-01T00:00:00Z"},
        {"note", "seed"}}}};
  auto payload = Canonicalize(statement);
  if (!payload.ok()) return 1;
  DsseEnvelope envelope;
  envelope.payload_type = std::string(kInTotoPayloadType);
  envelope.payload = *payload;
  envelope.signatures.push_back(
      {key.public_key().KeyId(), key.Sign(PreAuthEncoding(envelope.payload_type, envelope.payload))});
  Write(root + "/dsse/reviewed.json", SerializeEnvelope(envelope));
  return 0;
}
