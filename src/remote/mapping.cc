// The OCI mapping (mapping.h; normative text in docs/format.md).
#include "remote/mapping.h"

#include <algorithm>
#include <cctype>
#include <unordered_set>

#include "json/fields.h"
#include "ki/ingest.h"
#include "ki/json.h"
#include "ki/sign.h"
#include "remote/http.h"
#include "remote/pack.h"
#include "remote/target.h"

namespace ki::remote {

namespace {

constexpr std::string_view kFormatVersion = "1";
// A packed bundle (docs/format.md, "Bundles"): its index, parts and pack
// manifest say "2", so that a ki that reads only format 1 refuses it
// instead of pulling the few objects its parts list.
constexpr std::string_view kPackedFormat = "2";


// A media type a layer descriptor carries as it is: one `ki add` accepts
// (IsValidMediaType) without spaces, quotes or backslashes, so that tools
// that read descriptors need not parse parameters. The ki annotation
// carries the media type verbatim either way.
bool SaneMediaType(std::string_view t) {
  return IsValidMediaType(t) && t.find_first_of(" \t\"\\") == std::string_view::npos;
}

Status Bad(std::string_view what) { return Status::InvalidInput("remote manifest: " + std::string(what)); }

}  // namespace

std::string_view RoleName(Role r) {
  switch (r) {
    case Role::kManifest: return "manifest";
    case Role::kDocument: return "document";
    case Role::kBlob: return "blob";
    case Role::kAttestation: return "attestation";
  }
  return "?";
}

bool HexDecode(std::string_view hex, std::string* out) {
  if (hex.size() % 2) return false;
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  out->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    int a = nib(hex[i]), b = nib(hex[i + 1]);
    if (a < 0 || b < 0) return false;
    out->push_back(char(a << 4 | b));
  }
  return true;
}

std::string_view EmptyConfig() { return "{}"; }
Digest EmptyConfigDigest() {
  static const Digest d = Sha256Of(EmptyConfig());
  return d;
}

// The extension standard clients get for a blob's title, from the media
// type's type/subtype: "text/plain; charset=utf-8" is text/plain.
std::string ExtensionFor(std::string_view media_type) {
  media_type = media_type.substr(0, media_type.find(';'));
  while (!media_type.empty() && (media_type.back() == ' ' || media_type.back() == '\t')) media_type.remove_suffix(1);
  std::string essence(media_type);
  std::transform(essence.begin(), essence.end(), essence.begin(), [](unsigned char c) { return std::tolower(c); });
  static const std::pair<const char*, const char*> kExt[] = {
      {"text/plain", ".txt"},        {"text/markdown", ".md"},   {"application/json", ".json"},
      {"application/jsonl", ".jsonl"}, {"application/yaml", ".yaml"}, {"text/csv", ".csv"},
      {"text/x-cuda", ".cu"},        {"text/x-c++", ".cc"},      {"text/x-c", ".c"},
      {"text/x-python", ".py"},      {"application/zstd", ".zst"}, {"application/gzip", ".gz"},
      {"application/x-tar", ".tar"}, {"text/html", ".html"},     {"application/x-npy", ".npy"},
      {"application/vnd.safetensors", ".safetensors"},
  };
  for (const auto& [t, e] : kExt)
    if (essence == t) return e;
  return ".bin";
}

namespace {

Json LayerJson(const Layer& l) {
  Json ann = {{std::string(kAnnTitle), l.title},
              {std::string(kAnnRole), RoleName(l.role)},
              {std::string(kAnnMediaType), l.media_type}};
  if (l.kind) ann[std::string(kAnnKind)] = KindName(*l.kind);
  if (l.document_of) ann[std::string(kAnnDocumentOf)] = l.document_of->str();
  if (l.subject) ann[std::string(kAnnSubject)] = l.subject->str();
  if (!l.index_value.empty()) ann[std::string(kAnnIndexValue)] = HexEncode(l.index_value);
  return {{"mediaType", SaneMediaType(l.media_type) ? l.media_type : "application/octet-stream"},
          {"digest", l.digest.str()},
          {"size", l.size},
          {"annotations", ann}};
}

Json ConfigJson() {
  return {{"mediaType", kOciEmptyType}, {"digest", EmptyConfigDigest().str()}, {"size", 2}, {"data", "e30="}};
}

}  // namespace

std::string ImageManifest(const Closure& c) {
  Json layers = Json::array();
  for (const Layer& l : c.layers) layers.push_back(LayerJson(l));
  Json ann = {{std::string(kAnnFormat), kFormatVersion}, {std::string(kAnnRoot), c.root.str()}};
  if (!c.name.empty()) ann[std::string(kAnnName)] = c.name;
  if (c.root_kind) ann[std::string(kAnnKind)] = KindName(*c.root_kind);
  Json m = {{"schemaVersion", 2},
            {"mediaType", kOciManifestType},
            {"artifactType", kOciArtifactType},
            {"config", ConfigJson()},
            {"layers", layers},
            {"annotations", ann}};
  return m.dump();
}

namespace {

std::string PartManifest(const Json& layers, size_t i, size_t n, std::string_view format) {
  Json m = {{"schemaVersion", 2},
            {"mediaType", kOciManifestType},
            {"artifactType", kOciBundleType},
            {"config", ConfigJson()},
            {"layers", layers},
            {"annotations",
             {{std::string(kAnnFormat), format}, {std::string(kAnnPart), std::to_string(i) + "/" + std::to_string(n)}}}};
  return m.dump();
}

}  // namespace

std::vector<std::string> BundleParts(const std::vector<Layer>& layers, uint64_t part_bytes, bool packed) {
  // Split by the serialised size of the layer descriptors; the envelope of
  // a part (config, annotations) is well under 1 KiB.
  constexpr uint64_t kEnvelope = 1024;
  std::vector<Json> groups(1, Json::array());
  uint64_t bytes = kEnvelope;
  for (const Layer& l : layers) {
    Json d = LayerJson(l);
    uint64_t n = d.dump().size() + 1;
    if (!groups.back().empty() && bytes + n > part_bytes) {
      groups.push_back(Json::array());
      bytes = kEnvelope;
    }
    groups.back().push_back(std::move(d));
    bytes += n;
  }
  std::vector<std::string> parts;
  if (packed && layers.empty()) return parts;  // everything is in the pack
  for (size_t i = 0; i < groups.size(); ++i)
    parts.push_back(PartManifest(groups[i], i + 1, groups.size(), packed ? kPackedFormat : kFormatVersion));
  return parts;
}

std::string BundleIndex(const std::vector<std::string>& parts, size_t roots, const std::string* pack_manifest,
                        bool packed) {
  Json manifests = Json::array();
  for (const std::string& p : parts) {
    manifests.push_back({{"mediaType", kOciManifestType},
                         {"digest", Sha256Of(p).str()},
                         {"size", p.size()},
                         {"artifactType", kOciBundleType}});
  }
  if (pack_manifest) {
    manifests.push_back({{"mediaType", kOciManifestType},
                         {"digest", Sha256Of(*pack_manifest).str()},
                         {"size", pack_manifest->size()},
                         {"artifactType", kOciPackType}});
  }
  Json idx = {{"schemaVersion", 2},
              {"mediaType", kOciIndexType},
              {"artifactType", kOciBundleType},
              {"manifests", manifests},
              {"annotations",
               {{std::string(kAnnFormat), packed ? kPackedFormat : kFormatVersion}, {std::string(kAnnRoots), std::to_string(roots)}}}};
  return idx.dump();
}

std::string PackManifest(const Digest& pack, uint64_t size, uint64_t objects, const PartRef* toc) {
  Json layers = Json::array({{{"mediaType", kOciPackMediaType},
                              {"digest", pack.str()},
                              {"size", size},
                              {"annotations", {{std::string(kAnnTitle), kPackTitle}}}}});
  if (toc) {
    layers.push_back({{"mediaType", kOciTocMediaType},
                      {"digest", toc->digest.str()},
                      {"size", toc->size},
                      {"annotations", {{std::string(kAnnTitle), kTocTitle}}}});
  }
  Json m = {{"schemaVersion", 2},
            {"mediaType", kOciManifestType},
            {"artifactType", kOciPackType},
            {"config", ConfigJson()},
            {"layers", layers},
            {"annotations",
             {{std::string(kAnnFormat), toc ? kPackedFormat : kFormatVersion},
              {std::string(kAnnPackObjects), std::to_string(objects)}}}};
  return m.dump();
}

std::string AttestationManifest(const Layer& att, const Digest& subject_manifest, uint64_t subject_size) {
  Json m = {{"schemaVersion", 2},
            {"mediaType", kOciManifestType},
            {"artifactType", kDsseMediaType},
            {"config", ConfigJson()},
            {"layers", Json::array({LayerJson(att)})},
            {"subject", {{"mediaType", kOciManifestType}, {"digest", subject_manifest.str()}, {"size", subject_size}}},
            {"annotations", {{std::string(kAnnFormat), kFormatVersion}, {std::string(kAnnSubject), att.subject->str()}}}};
  return m.dump();
}

Result<uint64_t> DescriptorSize(const Json& d, std::string_view where) {
  const std::string w(where);
  if (!d.is_object() || !d.contains("size")) return Status::InvalidInput(w + ": no `size` (a descriptor needs one)");
  const Json& v = d["size"];
  if (!v.is_number_integer()) {
    return Status::InvalidInput(w + ": `size` is " + std::string(JsonTypeName(v)) + " " + v.dump().substr(0, 40) +
                                ", not an integer");
  }
  if (!v.is_number_unsigned() && v.get<int64_t>() < 0) {
    return Status::InvalidInput(w + ": `size` is " + v.dump() + ", negative");
  }
  uint64_t size = v.get<uint64_t>();
  if (size > uint64_t(INT64_MAX)) {
    return Status::InvalidInput(w + ": `size` " + std::to_string(size) + " is past the image-spec's int64");
  }
  return size;
}

namespace {

Result<Json> ParseRemoteJson(std::string_view bytes, std::string_view content_type, const TransferOptions& opts) {
  if (!content_type.empty() && content_type != kOciManifestType) {
    return Bad("the remote calls it '" + std::string(content_type.substr(0, 100)) + "', not " +
               std::string(kOciManifestType));
  }
  ParseLimits limits;
  limits.max_bytes = opts.max_manifest_size;
  limits.max_depth = 16;
  KI_ASSIGN_OR_RETURN(Json j, ParseDocument(bytes, DocFormat::kJson, "remote manifest", limits));
  if (!j.is_object()) return Bad("not a JSON object");
  if (!j.contains("schemaVersion") || j["schemaVersion"] != 2) return Bad("schemaVersion is not 2");
  if (!j.contains("mediaType") || j["mediaType"] != kOciManifestType) {
    return Bad("its mediaType field is not " + std::string(kOciManifestType) + " (it says " +
               (j.contains("mediaType") ? j["mediaType"].dump().substr(0, 100) : std::string("nothing")) + ")");
  }
  if (!j.contains("layers") || !j["layers"].is_array()) return Bad("no layers");
  if (j["layers"].size() > opts.max_layers) return Bad("more layers than the limit");
  return j;
}

// An annotation of a manifest or index; "" when absent or not a string
// (each caller then refuses what it needed).
std::string Ann(const Json& ann, std::string_view key) { return StringOr(ann, key); }

Result<Layer> ParseLayer(const Json& d, const TransferOptions& opts, size_t i) {
  std::string where = "layer " + std::to_string(i);
  if (!d.is_object() || !d.contains("digest") || !d["digest"].is_string() || !d.contains("size") ||
      !d.contains("mediaType") || !d["mediaType"].is_string()) {
    return Bad(where + ": not a descriptor {mediaType, digest, size}");
  }
  KI_RETURN_IF_ERROR(DescriptorSize(d, "remote manifest: " + where).status());
  Layer l;
  auto dg = Digest::Parse(d["digest"].get<std::string>());
  if (!dg.ok()) return Bad(where + ": digest is not sha256:<64 hex>");
  l.digest = *dg;
  l.size = d["size"].get<uint64_t>();
  // A layer's annotations say what ki makes of it: one that is there with
  // another type than a string is refused, not read as absent (a role of 5
  // is not "blob").
  const Json ann = d.contains("annotations") ? d["annotations"] : Json();
  const std::string ann_where = "remote manifest: " + where + ": annotations";
  auto ann_field = [&](std::string_view key) { return GetString(ann, key, ann_where); };
  KI_ASSIGN_OR_RETURN(l.title, ann_field(kAnnTitle));
  if (!l.title.empty() && !IsSafeTitle(l.title)) {
    return Bad(where + ": title annotation '" + l.title.substr(0, 100) + "' is not a safe relative file name");
  }
  KI_ASSIGN_OR_RETURN(std::string role, ann_field(kAnnRole));
  KI_ASSIGN_OR_RETURN(l.media_type, ann_field(kAnnMediaType));
  if (l.media_type.empty()) l.media_type = d["mediaType"].get<std::string>();
  // Exactly what `ki add` accepts (ingest.h), which push carries verbatim.
  KI_RETURN_IF_ERROR(CheckMediaType(l.media_type, "remote manifest: " + where));
  KI_ASSIGN_OR_RETURN(std::string kind, ann_field(kAnnKind));
  if (!kind.empty()) {
    auto k = ParseKind(kind);
    if (!k) return Bad(where + ": unknown kind '" + kind.substr(0, 60) + "'");
    l.kind = *k;
  }
  if (role == "manifest") {
    l.role = Role::kManifest;
    if (!l.kind) return Bad(where + ": a manifest layer without a kind");
  } else if (role == "document") {
    l.role = Role::kDocument;
    KI_ASSIGN_OR_RETURN(std::string of_text, ann_field(kAnnDocumentOf));
    auto of = Digest::Parse(of_text);
    if (!of.ok()) return Bad(where + ": a document layer without document-of");
    l.document_of = *of;
    if (l.media_type != kDocumentMediaTypeJson && l.media_type != kDocumentMediaTypeYaml) {
      return Bad(where + ": a document layer with media type " + l.media_type);
    }
  } else if (role == "blob" || role.empty()) {
    l.role = Role::kBlob;
  } else if (role == "attestation") {
    l.role = Role::kAttestation;
    KI_ASSIGN_OR_RETURN(std::string subject, ann_field(kAnnSubject));
    auto s = Digest::Parse(subject);
    if (!s.ok()) return Bad(where + ": an attestation layer without a subject");
    l.subject = *s;
    KI_ASSIGN_OR_RETURN(std::string hex, ann_field(kAnnIndexValue));
    if (hex.size() > 4096 || !HexDecode(hex, &l.index_value)) return Bad(where + ": bad index-value");
  } else {
    return Bad(where + ": unknown role '" + role.substr(0, 60) + "'");
  }
  // Only what a pull holds whole is capped: a blob over stream_above goes
  // to a scratch file (pull.cc), whatever its size.
  const bool streamed = l.role == Role::kBlob && l.size > opts.stream_above;
  if (!streamed && l.size > opts.max_blob_size) {
    return Status::InvalidInput("remote manifest: " + where + " (" + l.digest.str() + ") announces " +
                                std::to_string(l.size) + " bytes, over the limit of " + std::to_string(opts.max_blob_size) +
                                " for an object held in memory");
  }
  return l;
}

}  // namespace

Result<Closure> ParseImageManifest(std::string_view bytes, std::string_view content_type, const TransferOptions& opts) {
  KI_ASSIGN_OR_RETURN(Json j, ParseRemoteJson(bytes, content_type, opts));
  if (!j.contains("artifactType") || j["artifactType"] != kOciArtifactType) {
    return Bad("not a ki artifact (artifactType is not " + std::string(kOciArtifactType) + ")");
  }
  const Json ann = j.contains("annotations") ? j["annotations"] : Json();
  if (Ann(ann, kAnnFormat) != kFormatVersion) {
    return Bad("ki format '" + Ann(ann, kAnnFormat).substr(0, 20) + "' is not one this ki reads (1)");
  }
  Closure c;
  auto root = Digest::Parse(Ann(ann, kAnnRoot));
  if (!root.ok()) return Bad("no root annotation");
  c.root = *root;
  c.name = Ann(ann, kAnnName);
  std::unordered_set<Digest> seen;
  bool root_listed = false;
  for (size_t i = 0; i < j["layers"].size(); ++i) {
    KI_ASSIGN_OR_RETURN(Layer l, ParseLayer(j["layers"][i], opts, i));
    if (!seen.insert(l.digest).second) return Bad("layer " + std::to_string(i) + " repeats " + l.digest.str());
    if (l.digest == c.root) root_listed = true;
    c.layers.push_back(std::move(l));
  }
  if (!root_listed) return Bad("the root " + c.root.str() + " is not among the layers");
  return c;
}

Result<BundleRefs> ParseBundleIndex(std::string_view bytes, std::string_view content_type, const TransferOptions& opts) {
  auto bad = [](std::string_view what) { return Status::InvalidInput("remote bundle index: " + std::string(what)); };
  if (!content_type.empty() && content_type != kOciIndexType) {
    return bad("the remote calls it '" + std::string(content_type.substr(0, 100)) + "', not " + std::string(kOciIndexType));
  }
  ParseLimits limits;
  limits.max_bytes = opts.max_manifest_size;
  limits.max_depth = 16;
  KI_ASSIGN_OR_RETURN(Json j, ParseDocument(bytes, DocFormat::kJson, "remote index", limits));
  if (!j.is_object() || !j.contains("schemaVersion") || j["schemaVersion"] != 2) return bad("schemaVersion is not 2");
  if (!j.contains("mediaType") || j["mediaType"] != kOciIndexType) return bad("its mediaType field is not an image index");
  const Json ann = j.contains("annotations") ? j["annotations"] : Json();
  // An index without any artifactType is read as a ki bundle when its
  // annotations say so: tools that predate artifactType (skopeo 1.9.3)
  // re-serialise the index without it, keeping parts and pack manifest
  // byte for byte. Which entry is the pack is then told by the manifests
  // themselves (`typed` false), each checked as it is fetched.
  bool typed = j.contains("artifactType");
  if ((typed && j["artifactType"] != kOciBundleType) || (!typed && Ann(ann, kAnnRoots).empty())) {
    return bad("not a ki bundle (artifactType is not " + std::string(kOciBundleType) + ")");
  }
  const std::string format = Ann(ann, kAnnFormat);
  if (format != kFormatVersion && format != kPackedFormat) {
    return bad("ki format '" + format.substr(0, 20) + "' is not one this ki reads (1, 2)");
  }
  if (!j.contains("manifests") || !j["manifests"].is_array() || j["manifests"].empty()) return bad("no manifests");
  if (j["manifests"].size() > kBundleMaxEntries) {
    return bad(std::to_string(j["manifests"].size()) + " entries, more than " + std::to_string(kBundleMaxParts) +
               " parts and a pack manifest");
  }
  BundleRefs refs;
  refs.packed = format == kPackedFormat;
  std::unordered_set<Digest> seen;
  const Json& manifests = j["manifests"];
  for (size_t i = 0; i < manifests.size(); ++i) {
    const Json& d = manifests[i];
    std::string where = "remote bundle index: manifests[" + std::to_string(i) + "]";
    KI_ASSIGN_OR_RETURN(std::string art, GetString(d, "artifactType", where));
    KI_ASSIGN_OR_RETURN(std::string media_type, GetString(d, "mediaType", where));
    KI_ASSIGN_OR_RETURN(std::string digest, GetString(d, "digest", where));
    KI_ASSIGN_OR_RETURN(uint64_t size, DescriptorSize(d, where));
    bool pack = art == kOciPackType;
    if (media_type != kOciManifestType || (art != kOciBundleType && !pack && (typed || !art.empty()))) {
      return bad("an entry that is neither a ki bundle part nor a pack manifest descriptor");
    }
    auto dg = Digest::Parse(digest);
    if (!dg.ok()) return bad("an entry whose digest is not sha256:<64 hex>");
    PartRef p{*dg, size, !art.empty()};
    if (p.size > opts.max_manifest_size) return bad("an entry over the manifest size limit");
    if (!seen.insert(p.digest).second) return bad("an entry listed twice");
    if (pack) {
      if (refs.pack) return bad("more than one pack");
      refs.pack = p;
    } else {
      refs.parts.push_back(p);
    }
  }
  // A packed bundle may have no part (every object in its pack), never no
  // pack: untyped, the pack's manifest is among the entries.
  if (refs.parts.empty() && !refs.packed) return bad("no parts");
  if (refs.packed && !refs.pack && std::all_of(refs.parts.begin(), refs.parts.end(), [](const PartRef& p) { return p.typed; })) {
    return bad("a packed bundle (format 2) without a pack");
  }
  // Untyped entries (an index without artifactType fields) may include the
  // pack's manifest, which the caller tells apart when it fetches them.
  bool untyped = std::any_of(refs.parts.begin(), refs.parts.end(), [](const PartRef& p) { return !p.typed; });
  if (refs.parts.size() > kBundleMaxParts && (refs.pack || !untyped)) {
    return bad(std::to_string(refs.parts.size()) + " parts, more than " + std::to_string(kBundleMaxParts));
  }
  return refs;
}

Result<PartRef> ParsePackManifest(std::string_view bytes, std::string_view content_type, const TransferOptions& opts,
                                  std::optional<PartRef>* toc) {
  KI_ASSIGN_OR_RETURN(Json j, ParseRemoteJson(bytes, content_type, opts));
  if (!j.contains("artifactType") || j["artifactType"] != kOciPackType) {
    return Bad("not a ki pack manifest (artifactType is not " + std::string(kOciPackType) + ")");
  }
  const Json ann = j.contains("annotations") ? j["annotations"] : Json();
  const std::string format = Ann(ann, kAnnFormat);
  if (format != kFormatVersion && format != kPackedFormat) {
    return Bad("ki format '" + format.substr(0, 20) + "' is not one this ki reads (1, 2)");
  }
  const bool packed = format == kPackedFormat;
  if (j["layers"].size() != (packed ? 2u : 1u)) {
    return Bad(packed ? "a format 2 pack manifest must have exactly two layers (the pack, its table of contents)"
                      : "a pack manifest must have exactly one layer");
  }
  if (toc) toc->reset();
  if (packed) {
    const Json& t = j["layers"][1];
    const std::string where = "remote manifest: the pack manifest's table of contents";
    KI_ASSIGN_OR_RETURN(std::string media_type, GetString(t, "mediaType", where));
    KI_ASSIGN_OR_RETURN(std::string digest, GetString(t, "digest", where));
    KI_ASSIGN_OR_RETURN(uint64_t size, DescriptorSize(t, where));
    if (media_type != kOciTocMediaType) return Bad("the pack manifest's second layer is not a " + std::string(kOciTocMediaType) + " descriptor");
    auto dg = Digest::Parse(digest);
    if (!dg.ok()) return Bad("the table of contents' digest is not sha256:<64 hex>");
    if (size > opts.max_blob_size) return Bad("the table of contents announces " + std::to_string(size) + " bytes, over the limit");
    if (!toc) return Bad("a format 2 pack manifest where a format 1 one was expected");
    *toc = PartRef{*dg, size};
  }
  const Json& d = j["layers"][0];
  const std::string where = "remote manifest: the pack manifest's layer";
  KI_ASSIGN_OR_RETURN(std::string media_type, GetString(d, "mediaType", where));
  KI_ASSIGN_OR_RETURN(std::string digest, GetString(d, "digest", where));
  KI_ASSIGN_OR_RETURN(uint64_t size, DescriptorSize(d, where));
  if (media_type != kOciPackMediaType) {
    return Bad("the pack manifest's layer is not a " + std::string(kOciPackMediaType) + " descriptor");
  }
  auto dg = Digest::Parse(digest);
  if (!dg.ok()) return Bad("the pack's digest is not sha256:<64 hex>");
  PartRef p{*dg, size};
  if (p.size > opts.max_blob_size) {
    return Bad("the pack announces " + std::to_string(p.size) + " bytes, over the limit of " +
               std::to_string(opts.max_blob_size));
  }
  return p;
}

Result<std::vector<Layer>> ParseBundlePart(std::string_view bytes, std::string_view content_type,
                                           const TransferOptions& opts) {
  KI_ASSIGN_OR_RETURN(Json j, ParseRemoteJson(bytes, content_type, opts));
  if (!j.contains("artifactType") || j["artifactType"] != kOciBundleType) {
    return Bad("not a ki bundle part (artifactType is not " + std::string(kOciBundleType) + ")");
  }
  const Json ann = j.contains("annotations") ? j["annotations"] : Json();
  if (Ann(ann, kAnnFormat) != kFormatVersion && Ann(ann, kAnnFormat) != kPackedFormat) {
    return Bad("ki format '" + Ann(ann, kAnnFormat).substr(0, 20) + "' is not one this ki reads (1, 2)");
  }
  std::vector<Layer> layers;
  std::unordered_set<Digest> seen;
  for (size_t i = 0; i < j["layers"].size(); ++i) {
    KI_ASSIGN_OR_RETURN(Layer l, ParseLayer(j["layers"][i], opts, i));
    if (!seen.insert(l.digest).second) return Bad("layer " + std::to_string(i) + " repeats " + l.digest.str());
    layers.push_back(std::move(l));
  }
  return layers;
}

std::string TocJson(const BundleToc& toc) {
  Json objects = Json::array();
  for (const Layer& l : toc.objects) objects.push_back(LayerJson(l));
  Json roots = Json::array();
  for (const TocRoot& r : toc.roots) {
    Json e = {{"digest", r.digest.str()}, {"closure", r.closure}};
    if (!r.name.empty()) e["name"] = r.name;
    if (r.kind) e["kind"] = KindName(*r.kind);
    roots.push_back(std::move(e));
  }
  Json j = {{"format", kPackedFormat}, {"objects", objects}, {"roots", roots}};
  return j.dump();
}

Result<BundleToc> ParseToc(std::string_view json, const TransferOptions& opts) {
  auto bad = [](std::string_view what) { return Status::InvalidInput("remote bundle table of contents: " + std::string(what)); };
  ParseLimits limits;
  limits.max_bytes = std::max<uint64_t>(json.size(), 1);
  limits.max_depth = 16;
  KI_ASSIGN_OR_RETURN(Json j, ParseDocument(json, DocFormat::kJson, "remote bundle table of contents", limits));
  if (!j.is_object() || StringOr(j, "format") != kPackedFormat) return bad("not format 2");
  if (!j.contains("objects") || !j["objects"].is_array() || !j.contains("roots") || !j["roots"].is_array()) {
    return bad("no objects or roots");
  }
  if (j["objects"].size() > opts.max_layers) return bad("more objects than the limit of " + std::to_string(opts.max_layers));
  BundleToc toc;
  std::unordered_map<Digest, uint32_t> index_of;
  for (size_t i = 0; i < j["objects"].size(); ++i) {
    KI_ASSIGN_OR_RETURN(Layer l, ParseLayer(j["objects"][i], opts, i));
    if (!index_of.emplace(l.digest, uint32_t(i)).second) return bad("object " + std::to_string(i) + " repeats " + l.digest.str());
    toc.objects.push_back(std::move(l));
  }
  uint64_t entries = 0;
  for (size_t i = 0; i < j["roots"].size(); ++i) {
    const Json& e = j["roots"][i];
    const std::string where = "remote bundle table of contents: roots[" + std::to_string(i) + "]";
    KI_ASSIGN_OR_RETURN(std::string digest, GetString(e, "digest", where));
    KI_ASSIGN_OR_RETURN(std::string name, GetString(e, "name", where));
    KI_ASSIGN_OR_RETURN(std::string kind, GetString(e, "kind", where));
    TocRoot r;
    auto dg = Digest::Parse(digest);
    if (!dg.ok()) return bad("roots[" + std::to_string(i) + "]: digest is not sha256:<64 hex>");
    r.digest = *dg;
    auto at = index_of.find(r.digest);
    if (at == index_of.end()) return bad("roots[" + std::to_string(i) + "]: " + digest + " is not one of its objects");
    if (name.size() > 4096) return bad("roots[" + std::to_string(i) + "]: a name over 4096 bytes");
    r.name = std::move(name);
    if (!kind.empty()) {
      r.kind = ParseKind(kind);
      if (!r.kind) return bad("roots[" + std::to_string(i) + "]: unknown kind '" + kind.substr(0, 60) + "'");
    }
    if (!e.contains("closure") || !e["closure"].is_array() || e["closure"].empty()) return bad("roots[" + std::to_string(i) + "]: no closure");
    if ((entries += e["closure"].size()) > 64 * opts.max_layers) return bad("closures longer than the limit");
    for (const Json& k : e["closure"]) {
      if (!k.is_number_unsigned() || k.get<uint64_t>() >= toc.objects.size()) {
        return bad("roots[" + std::to_string(i) + "]: a closure index that is not one of its objects");
      }
      r.closure.push_back(uint32_t(k.get<uint64_t>()));
    }
    if (r.closure[0] != at->second) return bad("roots[" + std::to_string(i) + "]: the closure does not start with the root");
    toc.roots.push_back(std::move(r));
  }
  return toc;
}

Result<Layer> ParseAttestationManifest(std::string_view bytes, std::string_view content_type,
                                       const Digest& subject_manifest, const TransferOptions& opts) {
  KI_ASSIGN_OR_RETURN(Json j, ParseRemoteJson(bytes, content_type, opts));
  if (!j.contains("artifactType") || j["artifactType"] != kDsseMediaType) return Bad("referrer is not a DSSE attestation");
  if (!j.contains("subject") || StringOr(j["subject"], "digest") != subject_manifest.str()) {
    return Bad("referrer's subject is not " + subject_manifest.str());
  }
  if (j["layers"].size() != 1) return Bad("an attestation referrer must have exactly one layer");
  KI_ASSIGN_OR_RETURN(Layer l, ParseLayer(j["layers"][0], opts, 0));
  if (l.role != Role::kAttestation) return Bad("the referrer's layer is not an attestation");
  return l;
}

std::string AttestationFault(std::string_view envelope, const Digest& envelope_digest, const Digest& subject,
                             const KeySources* keys) {
  static const KeySources kNoKeys{};
  AttestationReport r = CheckEnvelope(envelope, envelope_digest, subject, keys ? *keys : kNoKeys);
  return r.fault() ? r.problem() : "";
}

}  // namespace ki::remote
