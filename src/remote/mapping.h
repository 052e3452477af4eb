// The OCI mapping of ki objects (docs/format.md, "Remotes: the OCI mapping"):
// which objects travel with a ref, how each becomes an image-manifest layer,
// and the strict reading of what a remote sends back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ki/digest.h"
#include "ki/json.h"
#include "ki/remote.h"
#include "ki/store.h"

namespace ki::remote {

// The `size` of an OCI descriptor, checked as the image-spec defines it
// (descriptor.md: "size int64 ... MUST" ): present, an integer (not "12",
// not 1.5), not negative, at most 2^63 - 1. InvalidInput "<where>: `size`
// ..." otherwise. Whether it fits a limit is the caller's to check, before
// reading that many bytes.
Result<uint64_t> DescriptorSize(const Json& descriptor, std::string_view where);

enum class Role { kManifest, kDocument, kBlob, kAttestation };
std::string_view RoleName(Role r);

struct Layer {
  Digest digest;
  uint64_t size = 0;
  Role role = Role::kBlob;
  std::string media_type;             // ki's media type of the object
  std::optional<Kind> kind;           // manifests and documents
  std::optional<Digest> document_of;  // documents: the manifest they describe
  std::optional<Digest> subject;      // attestations: the ki object signed
  std::string index_value;            // attestations: the index row's value (raw bytes)
  std::string title;
};

struct Closure {
  Digest root;
  std::string name;                   // "<Kind>/<name>", or "" when unnamed
  std::optional<Kind> root_kind;
  std::vector<Layer> layers;          // root first; one layer per digest
  std::vector<Digest> missing;        // referenced, not held locally (not pushed)
};

struct ClosureNode {
  bool present = false;
  std::vector<Layer> layers;        // the object, then its document
  std::vector<Layer> attestations;  // filed under the object
  std::vector<Digest> children;     // digests its manifest names
};
// Objects already read while collecting earlier closures of one push (a
// protocol shared by thousands of runs is read once).
struct ClosureCache {
  std::unordered_map<Digest, ClosureNode> nodes;
};

// The root and everything it reaches (references, document links) that the
// store holds, plus the attestations filed under any of them.
Result<Closure> CollectClosure(Store& store, const Digest& root, std::string_view preferred_name,
                               ClosureCache* cache = nullptr);

// The extension standard clients get for a blob's title ("blob-<hex>.txt"),
// from the media type's type/subtype: "text/plain; charset=utf-8" is
// text/plain; ".bin" for types without a usual one.
std::string ExtensionFor(std::string_view media_type);

// The empty config blob "{}" every ki image manifest uses.
std::string_view EmptyConfig();
Digest EmptyConfigDigest();

// Serialised image manifest (keys sorted, no whitespace: deterministic, so a
// re-push of the same closure writes the same digest).
std::string ImageManifest(const Closure& c);
// A referrer manifest attaching one attestation to `subject_manifest`.
std::string AttestationManifest(const Layer& att, const Digest& subject_manifest, uint64_t subject_size);

// A bundle (docs/format.md, "Bundles"): image manifests ("parts") of at
// most `part_bytes` each that list `layers` in order, and the image index
// that names them.
// `packed`: format 2, whose parts list only the objects the pack does not
// carry (may be no part at all).
std::vector<std::string> BundleParts(const std::vector<Layer>& layers, uint64_t part_bytes, bool packed = false);
// The index; `pack_manifest`, when given, is listed after the parts.
std::string BundleIndex(const std::vector<std::string>& parts, size_t roots,
                        const std::string* pack_manifest = nullptr, bool packed = false);
// The image manifest that references a pack blob (its one layer), and in
// a packed bundle (format 2) the bundle's table of contents as its second.
struct PartRef;
std::string PackManifest(const Digest& pack, uint64_t size, uint64_t objects, const PartRef* toc = nullptr);
// A descriptor from a remote: a part or pack manifest, or a pack blob.
struct PartRef {
  Digest digest;
  uint64_t size = 0;
  // false: an index re-serialised without artifactTypes does not say
  // whether this is a part or the pack's manifest; its own artifactType does.
  bool typed = true;
};
// A bundle index lists at most this many parts, and at most one pack
// manifest after them (docs/format.md, "Bundles"): a pull fetches every
// part before it stores anything, so the count bounds its work.
// (10,000 parts of 3 MiB hold tens of millions of objects.)
inline constexpr size_t kBundleMaxParts = 10000;
inline constexpr size_t kBundleMaxEntries = kBundleMaxParts + 1;
// What an index from a remote names (checked: media types, artifactType,
// format, sizes under the manifest limit, at most kBundleMaxParts parts and
// one pack manifest). In an index without artifactType fields, `parts` may
// hold the pack's manifest too (kBundleMaxEntries entries at most): the
// caller tells it apart when fetched, and then counts the parts.
struct BundleRefs {
  std::vector<PartRef> parts;
  std::optional<PartRef> pack;  // the pack's manifest
  // Format 2: the pack carries every object of at most kPackEntryMax bytes
  // (they have no blob of their own) and its manifest the table of
  // contents; the parts list only the larger objects, and may be none.
  bool packed = false;
};
Result<BundleRefs> ParseBundleIndex(std::string_view bytes, std::string_view content_type, const TransferOptions& opts);
// The pack blob a pack manifest references (checked as the parts are);
// `toc`, when given, receives the table of contents a format 2 pack
// manifest also references (a format 1 one has none: nullopt).
Result<PartRef> ParsePackManifest(std::string_view bytes, std::string_view content_type, const TransferOptions& opts,
                                  std::optional<PartRef>* toc = nullptr);

// The table of contents of a packed bundle (format 2; docs/format.md,
// "Bundles"): every object as its LAYER descriptor, in bundle order, and
// every root with its closure (indices into `objects`, the root first), so
// that one root can be pulled out of the bundle and a remote listed by
// what its bundles hold. Travels zstd-compressed as a blob (kOciTocMediaType).
struct TocRoot {
  Digest digest;
  std::string name;               // "<Kind>/<name>", "" when unnamed
  std::optional<Kind> kind;
  std::vector<uint32_t> closure;
};
struct BundleToc {
  std::vector<Layer> objects;
  std::vector<TocRoot> roots;
};
std::string TocJson(const BundleToc& toc);
// Checked: format 2, every object as a bundle part's layer is, each digest
// once, at most opts.max_layers objects, every root an object of the toc,
// closure indices in range and the root's own index first.
Result<BundleToc> ParseToc(std::string_view json, const TransferOptions& opts);
Result<std::vector<Layer>> ParseBundlePart(std::string_view bytes, std::string_view content_type,
                                           const TransferOptions& opts);

// Parses and checks an image manifest from a remote. `content_type` is what
// the remote declared ("" when it declared nothing).
Result<Closure> ParseImageManifest(std::string_view bytes, std::string_view content_type,
                                   const TransferOptions& opts);
// Parses a referrer manifest; returns its attestation layer.
Result<Layer> ParseAttestationManifest(std::string_view bytes, std::string_view content_type,
                                       const Digest& subject_manifest, const TransferOptions& opts);

// What keeps a pulled envelope filed under `subject` out of the store: the
// first fault CheckEnvelope (sign.h) finds with `keys` (null: none), the
// check `ki sign --envelope` runs before it files one. "" when it has none
// (signatures by unknown or untrusted keys are not faults).
std::string AttestationFault(std::string_view envelope, const Digest& envelope_digest, const Digest& subject,
                             const KeySources* keys);

bool HexDecode(std::string_view hex, std::string* out);

}  // namespace ki::remote
