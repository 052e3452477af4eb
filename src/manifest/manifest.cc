// Manifest identity: envelope checks, schema validation, the two
// normalisations, canonical bytes and digest (docs/identity.md).
#include "ki/manifest.h"

#include <algorithm>
#include <array>

#include "manifest/schema.h"

namespace ki {
namespace {

struct KindEntry {
  Kind kind;
  std::string_view name;
};
constexpr std::array<KindEntry, 13> kKinds = {{
    {Kind::kOperationSpec, "OperationSpec"},
    {Kind::kWorkloadCase, "WorkloadCase"},
    {Kind::kWorkloadSuite, "WorkloadSuite"},
    {Kind::kSoftwareProject, "SoftwareProject"},
    {Kind::kImplementationRevision, "ImplementationRevision"},
    {Kind::kBenchmarkProtocol, "BenchmarkProtocol"},
    {Kind::kExecutionEnvironment, "ExecutionEnvironment"},
    {Kind::kBenchmarkRun, "BenchmarkRun"},
    {Kind::kModelRevision, "ModelRevision"},
    {Kind::kServingStackRevision, "ServingStackRevision"},
    {Kind::kServingConfiguration, "ServingConfiguration"},
    {Kind::kServingWorkload, "ServingWorkload"},
    {Kind::kServingRun, "ServingRun"},
}};

Status Invalid(std::string_view source, std::string_view msg) {
  return Status::InvalidInput(std::string(source) + ": " + std::string(msg));
}

std::string Quote(const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

// ImplementationRevision.spec.support.* are sets: order and repetition carry
// no meaning, so they are sorted by UTF-16 code units and de-duplicated.
void NormalizeSets(Kind kind, Json* spec) {
  if (kind != Kind::kImplementationRevision) return;
  auto it = spec->find("support");
  if (it == spec->end() || !it->is_object()) return;
  for (auto& [_, list] : it->items()) {
    if (!list.is_array()) continue;
    auto& arr = list.get_ref<Json::array_t&>();
    if (!std::all_of(arr.begin(), arr.end(), [](const Json& e) { return e.is_string(); })) continue;
    std::sort(arr.begin(), arr.end(), [](const Json& a, const Json& b) {
      return Utf16Less(a.get_ref<const std::string&>(), b.get_ref<const std::string&>());
    });
    arr.erase(std::unique(arr.begin(), arr.end()), arr.end());
  }
}

// The canonical identity body {"apiVersion","kind","spec"}: its keys are
// already in RFC 8785 order, so only spec needs the general serialiser.
Status CanonicalBody(Kind kind, const Json& spec, std::string* out) {
  out->clear();
  out->reserve(256);
  out->append("{\"apiVersion\":\"");
  out->append(kApiVersion);
  out->append("\",\"kind\":\"");
  out->append(KindName(kind));
  out->append("\",\"spec\":");
  KI_RETURN_IF_ERROR(AppendCanonical(spec, out));
  out->push_back('}');
  return Status::OK();
}

// Envelope: the checks that come before the kind's schema can be chosen.
Result<Kind> CheckManifestEnvelope(const Json& doc, std::string_view source, std::string_view prefix,
                           bool want_metadata) {
  const std::string p(prefix);
  if (!doc.is_object()) return Invalid(source, (p.empty() ? "/" : p) + ": a manifest must be an object");
  auto av = doc.find("apiVersion");
  if (av == doc.end()) return Invalid(source, p + "/apiVersion: missing");
  if (!av->is_string() || av->get_ref<const std::string&>() != kApiVersion)
    return Invalid(source, p + "/apiVersion: unsupported apiVersion " + Quote(*av) + " (expected \"" +
                               std::string(kApiVersion) + "\")");
  auto kd = doc.find("kind");
  if (kd == doc.end()) return Invalid(source, p + "/kind: missing");
  std::optional<Kind> kind = kd->is_string() ? ParseKind(kd->get_ref<const std::string&>()) : std::nullopt;
  if (!kind) return Invalid(source, p + "/kind: unknown kind " + Quote(*kd));
  if (want_metadata) {
    auto md = doc.find("metadata");
    if (md == doc.end()) return Invalid(source, p + "/metadata: missing");
    if (!md->is_object()) return Invalid(source, p + "/metadata: must be an object");
  }
  auto sp = doc.find("spec");
  if (sp == doc.end()) return Invalid(source, p + "/spec: missing");
  if (!sp->is_object()) return Invalid(source, p + "/spec: must be an object");
  return *kind;
}

Result<Manifest> BuildManifest(Json doc, std::string_view source, std::string_view prefix) {
  KI_ASSIGN_OR_RETURN(Kind kind, CheckManifestEnvelope(doc, source, prefix, /*want_metadata=*/true));
  KI_ASSIGN_OR_RETURN(const schema::CompiledSchema* schema, schema::SchemaFor(kind));
  // Validation runs on the document as written: the schemas accept duration
  // strings ("8 us") beside integers, and the validator rewrites each one to
  // integer nanoseconds once its string form is valid.
  Status st = schema->ValidateAndNormalize(&doc, prefix);
  if (!st.ok()) return Invalid(source, st.message());
  Manifest m;
  m.kind = kind;
  auto& obj = doc.get_ref<Json::object_t&>();
  m.metadata = std::move(obj["metadata"]);
  m.spec = std::move(obj["spec"]);
  NormalizeSets(kind, &m.spec);
  st = CanonicalBody(kind, m.spec, &m.canonical);
  if (!st.ok()) return Invalid(source, std::string(prefix) + "/spec: " + st.message());
  m.digest = Sha256Of(m.canonical);
  return m;
}

void AddReference(std::vector<Reference>* out, const std::string& field, const Json& value,
                  const Json* parent) {
  if (!value.is_string()) return;
  auto d = Digest::Parse(value.get_ref<const std::string&>());
  if (!d.ok()) return;
  Reference r;
  r.field = field;
  r.target = *d;
  if (parent) {
    auto uri = parent->find("uri");
    if (uri != parent->end() && uri->is_string()) r.uri = uri->get<std::string>();
  }
  out->push_back(std::move(r));
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

void AppendToken(std::string* ptr, std::string_view token) {
  ptr->push_back('/');
  for (char c : token) {
    if (c == '~') *ptr += "~0";
    else if (c == '/') *ptr += "~1";
    else ptr->push_back(c);
  }
}

// References are fields named `digest` or `<something>Digest` (and the
// elements of `<something>Digests` lists) whose value is a well-formed digest.
void CollectReferences(const Json& v, std::string* ptr, std::vector<Reference>* out) {
  if (v.is_object()) {
    for (const auto& [k, child] : v.items()) {
      size_t mark = ptr->size();
      AppendToken(ptr, k);
      if (k == "digest" || EndsWith(k, "Digest")) {
        AddReference(out, *ptr, child, &v);
      } else if (EndsWith(k, "Digests") && child.is_array()) {
        for (size_t i = 0; i < child.size(); ++i) {
          size_t m2 = ptr->size();
          AppendToken(ptr, std::to_string(i));
          AddReference(out, *ptr, child[i], nullptr);
          ptr->resize(m2);
        }
      } else {
        CollectReferences(child, ptr, out);
      }
      ptr->resize(mark);
    }
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      size_t mark = ptr->size();
      AppendToken(ptr, std::to_string(i));
      CollectReferences(v[i], ptr, out);
      ptr->resize(mark);
    }
  }
}

bool IsBundle(const Json& doc) {
  return doc.is_object() && !doc.contains("apiVersion") && !doc.contains("kind") &&
         (doc.contains("run") || doc.contains("protocol") || doc.contains("environment"));
}

Result<ParsedInput> ParseBundle(Json doc, std::string_view source) {
  for (const auto& [k, _] : doc.items())
    if (k != "run" && k != "protocol" && k != "environment") {
      std::string msg = "/";
      msg += k;
      msg += ": unknown bundle field (a bundle is {run, protocol, environment})";
      return Invalid(source, msg);
    }
  ParsedInput in;
  in.form = InputForm::kBundle;
  static constexpr std::pair<std::string_view, Kind> kParts[] = {
      {"run", Kind::kBenchmarkRun},
      {"protocol", Kind::kBenchmarkProtocol},
      {"environment", Kind::kExecutionEnvironment}};
  for (auto [part, kind] : kParts) {
    std::string prefix = "/";
    prefix += part;
    auto it = doc.find(part);
    if (it == doc.end()) return Invalid(source, prefix + ": missing from the bundle");
    KI_ASSIGN_OR_RETURN(Manifest m, BuildManifest(*it, source, prefix));
    if (m.kind != kind)
      return Invalid(source, prefix + "/kind: a bundle's " + std::string(part) + " must be a " +
                                 std::string(KindName(kind)) + ", not " + std::string(KindName(m.kind)));
    in.manifests.push_back(std::move(m));
    in.documents.push_back(std::move(*it));
  }
  const Manifest& run = in.manifests[0];
  for (size_t i : {size_t{1}, size_t{2}}) {
    const char* field = i == 1 ? "protocolDigest" : "environmentDigest";
    const char* part = i == 1 ? "protocol" : "environment";
    const Json& named = run.spec[field];  // required by the BenchmarkRun schema
    const std::string actual = in.manifests[i].digest.str();
    if (named.get_ref<const std::string&>() != actual)
      return Invalid(source, std::string("/run/spec/") + field + ": the run names " + field + " " +
                                 named.get<std::string>() + " but the bundle's " + part + " has digest " +
                                 actual);
  }
  return in;
}

}  // namespace

std::string_view KindName(Kind k) {
  for (const auto& e : kKinds)
    if (e.kind == k) return e.name;
  return "Unknown";
}

std::optional<Kind> ParseKind(std::string_view name) {
  for (const auto& e : kKinds)
    if (e.name == name) return e.kind;
  return std::nullopt;
}

std::optional<Kind> ParseKindAnyCase(std::string_view name) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
  for (const auto& e : kKinds) {
    if (e.name.size() != name.size()) continue;
    if (std::equal(name.begin(), name.end(), e.name.begin(), [&](char a, char b) { return lower(a) == lower(b); }))
      return e.kind;
  }
  return std::nullopt;
}

const std::vector<Kind>& AllKinds() {
  static const std::vector<Kind> kAll = [] {
    std::vector<Kind> v;
    for (const auto& e : kKinds) v.push_back(e.kind);
    return v;
  }();
  return kAll;
}

std::string Manifest::name() const {
  if (!metadata.is_object()) return "";
  auto it = metadata.find("name");
  return it != metadata.end() && it->is_string() ? it->get<std::string>() : "";
}

Result<Manifest> ManifestFromJson(const Json& doc, std::string_view source) {
  return BuildManifest(doc, source, "");
}

Result<Manifest> ManifestFromJson(Json&& doc, std::string_view source) {
  return BuildManifest(std::move(doc), source, "");
}

Result<Manifest> ManifestFromCanonical(std::string_view canonical, std::string_view source) {
  // Canonical text may be longer than the document it came from (escapes),
  // so the input cap does not apply; nesting is the same as the original's.
  ParseLimits limits;
  limits.max_bytes = canonical.size();
  KI_ASSIGN_OR_RETURN(Json doc, ParseDocument(canonical, DocFormat::kJson, source, limits));
  KI_ASSIGN_OR_RETURN(Kind kind, CheckManifestEnvelope(doc, source, "", /*want_metadata=*/false));
  if (doc.size() != 3) return Invalid(source, "a stored manifest holds exactly apiVersion, kind and spec");
  KI_ASSIGN_OR_RETURN(const schema::CompiledSchema* schema, schema::SchemaFor(kind));
  const schema::Node* spec_schema = schema->Find("/properties/spec");
  if (!spec_schema) return Invalid(source, "schema of " + std::string(KindName(kind)) + " has no spec");
  Manifest m;
  m.kind = kind;
  m.spec = std::move(doc["spec"]);
  Status st = schema::ValidateAndNormalize(spec_schema, &m.spec, "/spec");
  if (!st.ok()) return Invalid(source, st.message());
  NormalizeSets(kind, &m.spec);
  st = CanonicalBody(kind, m.spec, &m.canonical);
  if (!st.ok()) return Invalid(source, st.message());
  if (m.canonical != canonical) return Invalid(source, "bytes are not the canonical form of the manifest");
  m.digest = Sha256Of(m.canonical);
  return m;
}

Result<Manifest> ManifestFromStored(std::string_view canonical, const Digest& digest) {
  std::string source = digest.str();
  Json doc = Json::parse(canonical, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Invalid(source, "stored manifest is not a JSON object");
  KI_ASSIGN_OR_RETURN(Kind kind, CheckManifestEnvelope(doc, source, "", /*want_metadata=*/false));
  Manifest m;
  m.kind = kind;
  m.spec = std::move(doc["spec"]);
  m.canonical = std::string(canonical);
  m.digest = digest;
  return m;
}

std::vector<Reference> ExtractReferences(const Manifest& m) {
  std::vector<Reference> out;
  std::string ptr = "/spec";
  CollectReferences(m.spec, &ptr, &out);
  return out;
}

Result<ParsedInput> ParseManifestInput(std::string_view text, DocFormat format, std::string_view source,
                                       const ParseLimits& limits) {
  KI_ASSIGN_OR_RETURN(std::vector<Json> docs, ParseDocuments(text, format, source, limits));
  // A YAML stream may end with an empty document (a trailing `---`).
  docs.erase(std::remove_if(docs.begin(), docs.end(), [](const Json& d) { return d.is_null(); }), docs.end());
  if (docs.empty()) return Invalid(source, "no manifest in the input");
  if (docs.size() == 1 && IsBundle(docs[0])) return ParseBundle(std::move(docs[0]), source);
  ParsedInput in;
  in.form = docs.size() == 1 ? InputForm::kSingle : InputForm::kMultiDocument;
  for (size_t i = 0; i < docs.size(); ++i) {
    std::string src(source);
    if (docs.size() > 1) src += ": document " + std::to_string(i + 1);
    if (IsBundle(docs[i])) return Invalid(src, "a bundle must be the only document of its input");
    KI_ASSIGN_OR_RETURN(Manifest m, BuildManifest(docs[i], src, ""));
    in.manifests.push_back(std::move(m));
    in.documents.push_back(std::move(docs[i]));
  }
  return in;
}

}  // namespace ki
