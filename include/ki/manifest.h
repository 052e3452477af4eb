// Manifest: a KernelIndex document and its identity.
//
// A manifest is {apiVersion, kind, metadata, spec}. Its digest (the "spec
// digest") is SHA-256 over the RFC 8785 canonical JSON of
// {apiVersion, kind, spec} after two normalisations (durations to integer
// nanoseconds; set-like lists sorted and de-duplicated), exactly as
// KernelIndex computes it (docs/identity.md). metadata is
// editorial and never hashed.
//
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ki/digest.h"
#include "ki/json.h"
#include "ki/status.h"

namespace ki {

inline constexpr std::string_view kApiVersion = "kernelindex.dev/v1alpha1";

// Values are persisted in the index: never renumber.
enum class Kind : uint8_t {
  kOperationSpec = 1,
  kWorkloadCase = 2,
  kWorkloadSuite = 3,
  kSoftwareProject = 4,
  kImplementationRevision = 5,
  kBenchmarkProtocol = 6,
  kExecutionEnvironment = 7,
  kBenchmarkRun = 8,
  kModelRevision = 9,
  kServingStackRevision = 10,
  kServingConfiguration = 11,
  kServingWorkload = 12,
  kServingRun = 13,
};

std::string_view KindName(Kind k);
std::optional<Kind> ParseKind(std::string_view name);  // exact, case-sensitive
// A kind as a user names it: any capitalisation ("benchmarkrun"). What a
// REF's `<Kind>/<name>` and `ki ls --kind` accept; manifests themselves must
// spell their kind exactly (ParseKind).
std::optional<Kind> ParseKindAnyCase(std::string_view name);
const std::vector<Kind>& AllKinds();

struct Manifest {
  Kind kind{};
  Json metadata;          // object, or null when absent (e.g. parsed from canonical bytes)
  Json spec;              // after normalisation
  std::string canonical;  // RFC 8785 bytes of {apiVersion, kind, spec}: the stored object
  Digest digest;          // SHA-256 of `canonical`

  std::string name() const;  // metadata.name, or "" when absent
};

// Validates the envelope (apiVersion, known kind, metadata, spec), the kind's
// JSON Schema (strict: unknown fields are rejected), normalises, and computes
// canonical bytes and digest. `source` prefixes error messages.
Result<Manifest> ManifestFromJson(const Json& doc, std::string_view source);
// The same, consuming `doc` (saves a copy of a large document).
Result<Manifest> ManifestFromJson(Json&& doc, std::string_view source);

// Re-reads a stored manifest object (canonical identity body, no metadata),
// checking everything: schema, normalisation, and that the bytes are the
// canonical form. For bytes from outside (a pull, a reindex, a verify).
Result<Manifest> ManifestFromCanonical(std::string_view canonical, std::string_view source);

// Re-reads manifest bytes the store has just re-hashed to `digest`: they were
// fully checked when stored, so only the envelope is parsed (reads of a run
// page stay fast). Do not use for bytes that did not come from the store.
Result<Manifest> ManifestFromStored(std::string_view canonical, const Digest& digest);

// A reference from a manifest to another object, by digest.
struct Reference {
  std::string field;   // JSON pointer inside the document, e.g. "/spec/protocolDigest"
  Digest target;
  std::string uri;     // for artifacts {uri, digest}; empty otherwise
};

// Every digest the manifest names: *Digest fields, artifact {uri, digest}
// objects, contentDigest of sources, and so on (docs/identity.md, section 8).
std::vector<Reference> ExtractReferences(const Manifest& m);

// One input file may hold one manifest, a bundle {run, protocol, environment}
// (the seed record's form and the catalog export's `manifest` column), or
// several YAML documents separated by `---`.
enum class InputForm { kSingle, kBundle, kMultiDocument };

struct ParsedInput {
  InputForm form = InputForm::kSingle;
  std::vector<Manifest> manifests;  // bundle order: run, protocol, environment
  std::vector<Json> documents;      // the original documents, metadata included, same order
};

// Parses a manifest input. For a bundle, a run whose protocolDigest or
// environmentDigest differs from the embedded object's digest is
// InvalidInput naming both digests.
Result<ParsedInput> ParseManifestInput(std::string_view text, DocFormat format,
                                       std::string_view source, const ParseLimits& limits = {});

}  // namespace ki
