// ki show REF [--json]: a human page for one object.
#include <iostream>

#include "command.h"
#include "ki/human.h"

namespace ki::cli {
namespace {

// A value as its document has it: a number as the shortest decimal that
// reads back to it ("49215.9", not "49215.900000000001").
std::string Scalar(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return human::ShortestDecimal(v.get<double>());
  return v.dump();
}

// Flattens a JSON value into "path  value" lines (nested paths with dots).
// Empty objects and arrays say nothing and are left out.
void Flatten(const Json& v, const std::string& path, std::vector<std::pair<std::string, std::string>>& out) {
  if ((v.is_object() || v.is_array()) && v.empty()) return;
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) Flatten(*it, path.empty() ? it.key() : path + "." + it.key(), out);
  } else if (v.is_array() && !v.empty() && (v[0].is_object() || v[0].is_array())) {
    for (size_t i = 0; i < v.size(); ++i) Flatten(v[i], path + "[" + std::to_string(i) + "]", out);
  } else if (v.is_array()) {
    std::string s;
    for (const auto& e : v) s += (s.empty() ? "" : ", ") + Scalar(e);
    out.emplace_back(path, "[" + s + "]");
  } else {
    out.emplace_back(path, Scalar(v));
  }
}

// A section of fields under its heading; no heading when there are none.
void PrintFields(const std::string& heading, const Json& v) {
  std::vector<std::pair<std::string, std::string>> rows;
  Flatten(v, "", rows);
  if (rows.empty()) return;
  human::Table t({{}, {}});
  for (auto& r : rows) t.AddRow({r.first, r.second});
  std::cout << "\n" << heading << "\n" << t.Render();
}

// "present", "missing", or "corrupt" for a referenced object.
std::string Presence(Store& store, const Digest& d, std::string* label = nullptr) {
  auto info = store.Stat(d);
  if (!info.ok() || !*info) {
    auto absent = store.StatAbsent(d);
    if (label && absent.ok() && *absent && !(*absent)->media_type.empty()) *label = (*absent)->media_type;
    return "missing";
  }
  if (label) {
    auto names = store.NamesOf(d);
    if (names.ok() && !names->empty()) *label = names->front();
    else if ((*info)->type == ObjectType::kBlob) *label = (*info)->media_type;
  }
  return "present";
}

std::optional<Manifest> LoadIfPresent(Store& store, const Json& spec, const char* field) {
  if (!spec.contains(field) || !spec[field].is_string()) return std::nullopt;
  auto d = Digest::Parse(spec[field].get<std::string>());
  if (!d.ok()) return std::nullopt;
  auto m = store.ReadManifest(*d);
  if (!m.ok()) return std::nullopt;
  return std::move(m).value();
}

void ShowRow(const std::string& k, const std::string& v) {
  if (v.empty()) {
    std::cout << "  " << k << "\n";
    return;
  }
  std::cout << "  " << k << std::string(k.size() < 22 ? 22 - k.size() : 1, ' ') << v << "\n";
}

void ShowRun(Store& store, const Manifest& m) {
  const Json& s = m.spec;
  std::cout << "\nPrimary measurement\n";
  if (s.contains("timing") && s["timing"].is_object()) {
    const Json& t = s["timing"];
    std::string stat = t.value("primaryStatistic", "");
    if (t.contains("latencyNs") && t["latencyNs"].contains(stat) && t["latencyNs"][stat].is_number()) {
      ShowRow("latency", FormatNs(t["latencyNs"][stat].get<double>()) + " " + stat);
    }
    if (t.contains("latencyNs") && t["latencyNs"].contains("confidence95")) {
      const Json& ci = t["latencyNs"]["confidence95"];
      if (ci.is_array() && ci.size() == 2 && ci[0].is_number() && ci[1].is_number())
        ShowRow("95% interval", FormatNs(ci[0].get<double>()) + " – " + FormatNs(ci[1].get<double>()));
    }
  } else if (s.contains("measurements") && s["measurements"].is_array() && !s["measurements"].empty()) {
    const Json& first = s["measurements"][0];
    const Json value = first.value("value", Json());
    const std::string unit = first.value("unit", "");
    ShowRow(first.value("metric", "measurement"),
        value.is_number() ? human::Quantity(value.get<double>(), unit) : Scalar(value) + (unit.empty() ? "" : " " + unit));
  } else {
    ShowRow("latency", "none recorded");
  }
  ShowRow("status", s.value("status", "?"));
  if (s.contains("observedAt")) ShowRow("observed", Scalar(s["observedAt"]));

  std::cout << "\nIdentity\n";
  for (const char* field : {"implementationDigest", "workloadDigest", "protocolDigest", "environmentDigest"}) {
    if (!s.contains(field)) continue;
    auto d = Digest::Parse(s[field].get<std::string>());
    if (!d.ok()) continue;
    std::string label;
    std::string presence = Presence(store, *d, &label);
    std::string role(field, std::string_view(field).find("Digest"));
    ShowRow(role, d->str() + "  " + (presence == "present" ? label : "(missing from this store)"));
  }

  if (s.contains("correctness") && s["correctness"].is_object()) PrintFields("Correctness", s["correctness"]);
  if (auto w = LoadIfPresent(store, s, "workloadDigest")) {
    // Axes, then each tensor's dtype and shape: under one heading, printed
    // only when the workload has either.
    Json fields = w->spec.contains("axes") && w->spec["axes"].is_object() ? w->spec["axes"] : Json::object();
    std::vector<std::pair<std::string, std::string>> tensors;
    if (w->spec.contains("tensors") && w->spec["tensors"].is_object()) {
      for (auto it = w->spec["tensors"].begin(); it != w->spec["tensors"].end(); ++it) {
        std::string shape;
        if (it->contains("shape")) shape = (*it)["shape"].dump();
        std::string dtype = it->is_object() ? it->value("dtype", "") : "";
        tensors.emplace_back(it.key(), dtype + (dtype.empty() || shape.empty() ? "" : " ") + shape);
      }
    }
    std::vector<std::pair<std::string, std::string>> rows;
    Flatten(fields, "", rows);
    rows.insert(rows.end(), tensors.begin(), tensors.end());
    if (!rows.empty()) {
      human::Table t({{}, {}});
      for (auto& r : rows) t.AddRow({r.first, r.second});
      std::cout << "\nWorkload\n" << t.Render();
    }
  }
  if (auto e = LoadIfPresent(store, s, "environmentDigest")) PrintFields("Environment", e->spec);
  if (auto p = LoadIfPresent(store, s, "protocolDigest")) PrintFields("Protocol", p->spec);
  if (s.contains("sourceNative")) PrintFields("Source-native", s["sourceNative"]);

  std::cout << "\nArtifacts\n";
  bool any = false;
  for (const Reference& r : ExtractReferences(m)) {
    if (r.field.rfind("/spec/evidence", 0) != 0 && r.uri.empty()) continue;
    std::string label;
    std::string presence = Presence(store, r.target, &label);
    ShowRow(r.field.substr(r.field.rfind("/spec/") == 0 ? 6 : 0),
        r.target.str() + "  " + (label.empty() ? "" : label + " · ") + presence);
    any = true;
  }
  if (!any) ShowRow("none", "");
}

RunFn SetupShow(CLI::App* sub, GlobalOptions* g) {
  auto ref = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  sub->add_option("ref", *ref, "object: digest, prefix, KIND/NAME or name")->required();
  sub->add_flag("--json", *json, "print the full manifest (metadata included) as JSON");
  return [ref, json, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
    KI_ASSIGN_OR_RETURN(Digest d, store->Resolve(*ref));
    KI_ASSIGN_OR_RETURN(auto info, store->Stat(d));
    if (!info) {
      KI_ASSIGN_OR_RETURN(auto absent, store->StatAbsent(d));
      Json j = {{"digest", d.str()}, {"present", false}};
      if (absent) {
        if (!absent->media_type.empty()) j["mediaType"] = absent->media_type;
        if (absent->size) j["size"] = *absent->size;
        if (!absent->uri.empty()) j["uri"] = absent->uri;
      }
      if (*json) {
        PrintJson(j);
      } else {
        std::cout << d.str() << "\nknown, but its bytes are not in this store\n";
        for (auto it = j.begin(); it != j.end(); ++it)
          if (it.key() != "digest" && it.key() != "present") ShowRow(it.key(), Scalar(*it));
      }
      return 0;
    }
    if (info->type == ObjectType::kBlob) {
      KI_ASSIGN_OR_RETURN(auto referrers, store->Referrers(d));
      if (*json) {
        Json refs = Json::array();
        for (auto& [r, field] : referrers) refs.push_back({{"digest", r.str()}, {"field", field}});
        PrintJson({{"digest", d.str()}, {"type", "blob"}, {"mediaType", info->media_type},
                   {"size", info->size}, {"referrers", refs}});
      } else {
        std::cout << "blob " << d.str() << "\n";
        ShowRow("media type", info->media_type);
        ShowRow("size", info->size < 1024 ? std::to_string(info->size) + " bytes"
                                      : human::Bytes(info->size) + " (" + std::to_string(info->size) + " bytes)");
        for (auto& [r, field] : referrers) ShowRow("referred by", r.str() + " " + field);
      }
      return 0;
    }
    KI_ASSIGN_OR_RETURN(Manifest m, store->ReadManifest(d));
    if (*json) {
      KI_ASSIGN_OR_RETURN(auto doc, store->ReadDocument(d));
      Json out = doc ? *doc : Json{{"apiVersion", kApiVersion}, {"kind", KindName(m.kind)}, {"spec", m.spec}};
      Json ki = {{"digest", d.str()}};
      for (const auto& f : ShowJsonFields()) KI_RETURN_IF_ERROR(f(*store, d, m, ki));
      out["ki"] = ki;
      PrintJson(out);
      return 0;
    }
    KI_ASSIGN_OR_RETURN(auto doc, store->ReadDocument(d));
    KI_ASSIGN_OR_RETURN(auto names, store->NamesOf(d));
    std::cout << KindName(m.kind) << " " << (names.empty() ? d.str() : names.front().substr(names.front().find('/') + 1))
              << "\n";
    ShowRow("digest", d.str());
    if (doc && doc->contains("metadata") && (*doc)["metadata"].is_object()) {
      const Json& md = (*doc)["metadata"];
      if (md.contains("title")) ShowRow("title", Scalar(md["title"]));
    }
    if (m.kind == Kind::kBenchmarkRun) {
      ShowRun(*store, m);
    } else {
      PrintFields("Spec", m.spec);
      KI_ASSIGN_OR_RETURN(auto referrers, store->Referrers(d));
      if (!referrers.empty()) {
        std::cout << "\nReferred to by\n";
        size_t shown = 0;
        for (auto& [r, field] : referrers) {
          if (++shown > 10) {
            ShowRow("…", std::to_string(referrers.size() - 10) + " more");
            break;
          }
          ShowRow(field, r.str());
        }
      }
    }
    for (const auto& [order, section] : ShowSections()) KI_RETURN_IF_ERROR(section(*store, d, m, std::cout));
    return 0;
  };
}

KI_REGISTER_COMMAND(show, {"show", "Show an object: a run's page, a manifest's fields, a blob's facts", SetupShow, 30});

}  // namespace
}  // namespace ki::cli
