// Resolve: what a REF (digest, prefix, Kind/name, bare name) names.
#include "json/fields.h"
#include "ki/tag.h"
#include "odb/store_impl.h"

namespace ki::odb {

Result<Digest> LmdbStore::Resolve(std::string_view ref) {
  if (ref.empty()) return Status::InvalidInput("empty reference");
  // tag:NAME names a tag and nothing else.
  if (ref.substr(0, kTagRefPrefix.size()) == kTagRefPrefix) {
    std::string_view name = ref.substr(kTagRefPrefix.size());
    KI_ASSIGN_OR_RETURN(auto tagged, LookupTag(*this, name));
    if (!tagged) return Status::NotFound("no tag named '" + std::string(name) + "'");
    return *tagged;
  }
  if (Digest::IsValid(ref)) {
    KI_ASSIGN_OR_RETURN(Digest d, Digest::Parse(ref));
    KI_ASSIGN_OR_RETURN(auto info, Stat(d));
    if (info) return d;
    KI_ASSIGN_OR_RETURN(auto absent, StatAbsent(d));
    if (absent) return d;
    return Status::NotFound(std::string(ref) + " is not in the store");
  }

  struct Candidate {
    Digest digest;
    std::string label;
  };
  std::vector<Candidate> found;
  auto add = [&](const Digest& d, std::string label) {
    for (const auto& c : found)
      if (c.digest == d) return;
    found.push_back({d, std::move(label)});
  };
  // Candidates of one name differ in what their documents say: the title
  // (a run's implementation and operation) tells them apart.
  auto label_of = [&](const Digest& d) -> std::string {
    auto info = Stat(d);
    std::string what = info.ok() && *info ? Describe(**info) : "absent";
    if (auto t = LookupTag(*this, ref); t.ok() && *t && **t == d) what += " tag:" + std::string(ref);
    auto names = NamesOf(d);
    if (names.ok() && !names->empty()) what += " " + names->front();
    if (!info.ok() || !*info || (*info)->type != ObjectType::kManifest) return what;
    auto doc = ReadDocument(d);
    const std::string title = doc.ok() && *doc ? NestedString(**doc, "metadata", "title") : "";
    if (!title.empty()) what += "  \"" + title + "\"";
    // One name's runs often share a title too (a leaderboard entry run on
    // several GPUs): the hardware and the time tell them apart.
    if ((*info)->kind != Kind::kBenchmarkRun) return what;
    auto run = ReadManifest(d);
    if (!run.ok()) return what;
    auto env_digest = Digest::Parse(StringOr(run->spec, "environmentDigest"));
    auto env = env_digest.ok() ? ReadManifest(*env_digest) : Result<Manifest>(env_digest.status());
    const std::string product = env.ok() ? NestedString(env->spec, "hardware", "product") : "";
    if (!product.empty()) what += " on " + product;
    const std::string observed = StringOr(run->spec, "observedAt");
    if (!observed.empty()) what += ", observed " + observed;
    return what;
  };
  auto add_named = [&](Kind kind, std::string_view name) -> Status {
    KI_ASSIGN_OR_RETURN(auto ds, LookupName(kind, name));
    for (const Digest& d : ds) add(d, "");
    return Status::OK();
  };

  // <Kind>/<name>
  if (auto slash = ref.find('/'); slash != std::string_view::npos) {
    std::string_view kind_text = ref.substr(0, slash);
    std::optional<Kind> kind = ParseKindAnyCase(kind_text);
    if (kind) {
      KI_RETURN_IF_ERROR(add_named(*kind, ref.substr(slash + 1)));
      if (found.empty()) {
        return Status::NotFound("no " + std::string(KindName(*kind)) + " named '" +
                                std::string(ref.substr(slash + 1)) + "'");
      }
    }
  }

  // Hex prefix, with or without "sha256:".
  std::optional<DigestPrefix> prefix = DigestPrefix::Parse(ref);
  bool had_prefix = ref.substr(0, 7) == "sha256:";
  if (!found.empty()) {
    // A <Kind>/<name>: it is not also a prefix or a bare name.
  } else if (prefix && prefix->digits() >= 4) {
    for (std::string_view table : {kMeta, kAbsent}) {
      KI_RETURN_IF_ERROR(Scan(table, prefix->key(), [&](std::string_view k, std::string_view) {
        if (prefix->Matches(k)) add(Digest::FromRaw(k), "");
        return found.size() <= 20;
      }));
    }
  } else if (had_prefix) {
    return Status::InvalidInput("'" + std::string(ref) +
                                "': a digest prefix needs at least 4 hex digits");
  }

  // A bare metadata name: every manifest of every kind that carries it.
  if (ref.find('/') == std::string_view::npos && !had_prefix) {
    // One nameset lookup per kind (a dozen B-tree searches): before format
    // 4 a table of its own (barenames) mirrored the names for this.
    for (Kind kind : AllKinds()) KI_RETURN_IF_ERROR(add_named(kind, ref));
  }
  // A tag of that name: one more candidate, so that a REF that could mean a
  // tag and another object is ambiguous rather than silently one of them.
  // Tag names are never all hex nor KIND/NAME (CheckTagName), so this adds
  // a candidate to a prefix or a Kind/name only for a tag made otherwise.
  if (!had_prefix) {
    KI_ASSIGN_OR_RETURN(auto tagged, LookupTag(*this, ref));
    if (tagged) add(*tagged, "");
  }
  if (found.empty() && prefix && prefix->digits() < 4) {
    return Status::InvalidInput("'" + std::string(ref) +
                                "': a digest prefix needs at least 4 hex digits");
  }

  if (found.size() == 1) return found[0].digest;
  if (found.empty()) return Status::NotFound("no object matches '" + std::string(ref) + "'");
  std::string msg = "'" + std::string(ref) + "' is ambiguous; it matches:";
  for (auto& c : found) msg += "\n  " + c.digest.str() + "  " + label_of(c.digest);
  return Status::Ambiguous(msg);
}

}  // namespace ki::odb
