// A run's page, with the sections of KernelIndex's run page: primary
// measurement and rank, identity, correctness, workload (axes, tensor
// shapes and dtypes), measurements, protocol, environment, artifacts,
// evidence level, attestations with signer and trust, the canonical
// manifest, and the digest as a permalink.
#include <algorithm>
#include <cstdio>

#include "ki/catalog.h"
#include "ki/human.h"
#include "ki/sign.h"
#include "report/html.h"
#include "report/inputs.h"
#include "report/pages.h"

namespace ki::report {

namespace {

// A value as its document has it: numbers as the shortest decimal that
// reads back to them.
std::string Scalar(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return human::ShortestDecimal(v.get<double>());
  return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void Flatten(const Json& v, const std::string& path, std::vector<std::pair<std::string, std::string>>& out) {
  if ((v.is_object() || v.is_array()) && v.empty()) return;
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) Flatten(*it, path.empty() ? it.key() : path + "." + it.key(), out);
  } else if (v.is_array() && (v[0].is_object() || v[0].is_array())) {
    for (size_t i = 0; i < v.size(); ++i) Flatten(v[i], path + "[" + std::to_string(i) + "]", out);
  } else if (v.is_array()) {
    std::string s;
    for (const auto& e : v) s += (s.empty() ? "" : ", ") + Scalar(e);
    out.emplace_back(path, "[" + s + "]");
  } else {
    out.emplace_back(path, Scalar(v));
  }
}

// "[412, 1, 4, 128]", as KernelIndex prints a shape.
std::string ShapeText(const Json& shape) {
  if (!shape.is_array()) return Scalar(shape);
  std::string s;
  for (const auto& d : shape) s += (s.empty() ? "" : ", ") + Scalar(d);
  return "[" + s + "]";
}

}  // namespace

std::string FieldsSection(const std::string& id, const std::string& heading, const Json& v,
                          const std::string& heading_html) {
  std::vector<std::pair<std::string, std::string>> rows;
  Flatten(v, "", rows);
  if (rows.empty()) return "";
  std::string out = "<section id=\"" + id + "\"><h2>" + (heading_html.empty() ? Esc(heading) : heading_html) +
                    "</h2>\n<table class=\"fields\">\n";
  for (auto& [k, val] : rows) out += Row(k, Esc(val));
  return out + "</table></section>\n";
}

Json DocumentOf(Store& store, const Manifest& m) {
  auto doc = store.ReadDocument(m.digest);
  if (doc.ok() && *doc) return **doc;
  return Json{{"apiVersion", kApiVersion}, {"kind", KindName(m.kind)}, {"spec", m.spec}};
}

std::string NameOfManifest(const Json& doc) {
  if (doc.contains("metadata") && doc["metadata"].is_object() && doc["metadata"].contains("name") &&
      doc["metadata"]["name"].is_string())
    return doc["metadata"]["name"].get<std::string>();
  return "";
}

namespace {

std::optional<Manifest> Load(Store& store, const Json& spec, const char* field) {
  if (!spec.contains(field) || !spec[field].is_string()) return std::nullopt;
  auto d = Digest::Parse(spec[field].get<std::string>());
  if (!d.ok()) return std::nullopt;
  auto m = store.ReadManifest(*d);
  if (!m.ok()) return std::nullopt;
  return std::move(m).value();
}


std::string NameOf(Store& store, const Digest& d) {
  auto names = store.NamesOf(d);
  if (!names.ok() || names->empty()) return "";
  return names->front().substr(names->front().find('/') + 1);
}

// "present", or why not.
std::string Presence(Store& store, const Digest& d, std::string* label) {
  auto info = store.Stat(d);
  if (info.ok() && *info) {
    std::string name = NameOf(store, d);
    *label = !name.empty() ? name : (*info)->media_type;
    return "present";
  }
  auto absent = store.StatAbsent(d);
  if (absent.ok() && *absent) {
    *label = (*absent)->media_type;
    return "unavailable";
  }
  return "missing from this store";
}

// "num_pages = 412 · batch_size = 1 · bf16": a workload at a glance.
std::string WorkloadSummary(const Manifest& w) {
  std::string s;
  if (w.spec.contains("axes") && w.spec["axes"].is_object())
    for (auto it = w.spec["axes"].begin(); it != w.spec["axes"].end(); ++it)
      s += (s.empty() ? "" : " · ") + it.key() + " = " + Scalar(*it);
  std::vector<std::string> dtypes;
  if (w.spec.contains("tensors") && w.spec["tensors"].is_object())
    for (const auto& t : w.spec["tensors"])
      if (t.is_object() && t.contains("dtype") && t["dtype"].is_string()) {
        std::string dt = t["dtype"].get<std::string>();
        if (std::find(dtypes.begin(), dtypes.end(), dt) == dtypes.end()) dtypes.push_back(dt);
      }
  for (const auto& dt : dtypes) s += (s.empty() ? "" : " · ") + dt;
  return s;
}

std::string Primary(const Json& s, const RunPlace& place, const Model& m, const Digest& run) {
  std::string out = "<section id=\"primary\"><h2>Primary measurement</h2>\n";
  std::string value, stat;
  if (s.contains("timing") && s["timing"].is_object()) {
    const Json& t = s["timing"];
    stat = t.value("primaryStatistic", "");
    if (t.contains("latencyNs") && t["latencyNs"].is_object() && t["latencyNs"].contains(stat) &&
        t["latencyNs"][stat].is_number())
      value = human::Duration(t["latencyNs"][stat].get<double>());
  } else if (s.contains("measurements") && s["measurements"].is_array() && !s["measurements"].empty() &&
             s["measurements"][0].is_object()) {
    const Json& first = s["measurements"][0];
    const Json v = first.value("value", Json());
    const std::string unit = first.value("unit", "");
    value = v.is_number() ? human::Quantity(v.get<double>(), unit) : Scalar(v);
    stat = first.value("metric", "");
  }
  out += "<p class=\"primary\"><span class=\"value\" id=\"primary-value\">" + Esc(value.empty() ? "none recorded" : value) +
         "</span> <span class=\"stat\">" + Esc(stat) + "</span></p>\n<p>";
  std::string line;
  if (place.group && place.group->ranking) {
    const auto& r = *place.group->ranking;
    const std::string group = Link(m, kSubpageRoot, place.group->page, "comparison group");
    if (place.entry && place.entry->rank > 0) {
      line = "<span id=\"rank\">Rank " + std::to_string(place.entry->rank) + " of " + std::to_string(r.ranked.size()) +
             "</span> in its " + group + (place.entry->tied_with_previous ? " (tied)" : "");
    } else {
      std::string reasons;
      if (place.entry)
        for (const auto& x : place.entry->reasons) reasons += (reasons.empty() ? "" : ", ") + x;
      line = "<span id=\"rank\">Not ranked</span> (" + Esc(reasons) + ") in its " + group;
    }
    line += r.source_native ? " · source-native comparison" : " · strict comparison";
  } else if (place.group) {
    line = "In serving " + Link(m, kSubpageRoot, place.group->page, "comparison group") + " (not ranked)";
  } else {
    line = "In no comparison group yet (this store lacks what its group key needs)";
  }
  if (s.contains("observedAt") && s["observedAt"].is_string())
    line += " · observed " + Esc(s["observedAt"].get<std::string>().substr(0, 10));
  out += line + "</p>\n";
  if (place.group && place.group->ranking && !place.group->ranking->ranked.empty()) {
    const auto& first = place.group->ranking->ranked.front();
    if (first.run != run)
      out += "<p>" + Link(m, kSubpageRoot, RunPage(first.run), "Compare with #1 (" + Esc(ValueText(first)) + ") →", "id=\"first\"") +
             "</p>\n";
  }
  const Json sf = s.value("/sourceNative/metrics/speedup_factor"_json_pointer, Json());
  if (sf.is_number()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f× reference", sf.get<double>());
    out += "<p class=\"speedup\">" + std::string(buf) + "</p>\n";
  }
  return out + "</section>\n";
}

// Links to the run's history (its series) and to its re-runs' pages, or
// the page of the re-run it is.
std::string HistoryAndReruns(const Model& m, const RunPlace& place) {
  std::string out;
  if (place.series && m.Has(place.series->page)) {
    const SeriesView& s = *place.series;
    out += "<p>" + Link(m, kSubpageRoot, s.page, "History of " + Esc(s.label) + " in this group (" +
                                              std::to_string(s.runs.size()) + " runs) →", "id=\"series-link\"") + "</p>\n";
  }
  if (place.rerun_of) {
    const RerunView& r = *place.rerun_of;
    const std::string outcome = OutcomeText(r.verdict);
    out += "<p id=\"rerun-of\">A re-run of " +
           Link(m, kSubpageRoot, RunPage(r.original), "<span class=\"digest\">" + Esc(ShortDigest(r.original)) + "</span>") +
           (outcome.empty() ? "" : ": " + Esc(outcome)) + " · " +
           Link(m, kSubpageRoot, r.page, "both runs' samples →", "class=\"rerun-link\"") + "</p>\n";
  }
  if (!place.reruns.empty()) {
    out += "<table id=\"reruns\"><thead><tr><th>re-run</th><th>verdict</th><th>ratio</th><th></th></tr></thead><tbody>\n";
    for (const RerunView* r : place.reruns) {
      const std::string outcome = OutcomeText(r->verdict);
      std::string ratio = "-";
      if (r->verdict && r->verdict->contains("ratio") && (*r->verdict)["ratio"].is_number()) {
        ratio = human::Fixed((*r->verdict)["ratio"].get<double>(), 3);
      }
      out += "<tr><td>" + Link(m, kSubpageRoot, RunPage(r->rerun), Esc(ShortDigest(r->rerun)), "class=\"digest\"") + "</td>" +
             Tag("td", outcome.empty() ? "no verdict" : outcome) + Tag("td", ratio, "class=\"num\"") + "<td>" +
             Link(m, kSubpageRoot, r->page, "samples side by side →", "class=\"rerun-link\"") + "</td></tr>\n";
    }
    out += "</tbody></table>\n";
  }
  if (out.empty()) return "";
  return "<section id=\"history-reruns\"><h2>History and re-runs</h2>\n" + out + "</section>\n";
}

std::string Identity(Store& store, const Model& m, const Manifest& run, const RunPlace& place,
                     const std::optional<Json>& facts, const std::optional<Manifest>& workload) {
  const Json& s = run.spec;
  std::string out = "<section id=\"identity\"><h2>Identity</h2>\n<table class=\"fields\">\n";
  if (auto d = Digest::Parse(s.value("implementationDigest", "")); d.ok()) {
    std::string label;
    std::string presence = Presence(store, *d, &label);
    out += Row("implementation", (label.empty() ? "" : Esc(label) + " ") + "<code>" + Esc(d->str()) + "</code>" +
                                     (presence == "present" ? "" : " · " + Esc(presence)));
    if (auto impl = store.ReadManifest(*d); impl.ok()) {
      const Json pr = impl->spec.value("projectRevision", Json::object());
      if (pr.is_object()) {
        if (pr.contains("repository")) out += Row("project", Esc(Scalar(pr["repository"])));
        if (pr.contains("commit")) out += Row("revision", Esc(Scalar(pr["commit"])));
      }
    }
  }
  if (workload) out += Row("workload", Esc(WorkloadSummary(*workload)));
  if (place.group)
    out += Row("comparison key",
               Link(m, kSubpageRoot, place.group->page, "<code>" + Esc(place.group->summary.cohort.str()) + "</code>"));
  if (facts) {
    if (facts->contains("source") && (*facts)["source"].is_object())
      out += Row("source", Esc((*facts)["source"].value("name", "")));
    if (facts->contains("sourceId") && (*facts)["sourceId"].is_string())
      out += Row("external id", Esc((*facts)["sourceId"].get<std::string>()));
  }
  out += Row("digest", "<a id=\"permalink\" class=\"digest\" href=\"" + kSubpageRoot + RunPage(run.digest) + "\">" +
                           Esc(run.digest.str()) + "</a>");
  return out + "</table></section>\n";
}

std::string WorkloadSection(const Manifest& w) {
  std::vector<std::pair<std::string, std::string>> rows;
  if (w.spec.contains("axes") && w.spec["axes"].is_object()) Flatten(w.spec["axes"], "", rows);
  if (w.spec.contains("tensors") && w.spec["tensors"].is_object()) {
    for (auto it = w.spec["tensors"].begin(); it != w.spec["tensors"].end(); ++it) {
      if (!it->is_object()) continue;
      std::string dtype = it->value("dtype", "");
      std::string shape = it->contains("shape") ? ShapeText((*it)["shape"]) : "";
      rows.emplace_back(it.key(), dtype + (dtype.empty() || shape.empty() ? "" : " ") + shape);
    }
  }
  if (w.spec.contains("correctness") && w.spec["correctness"].is_object() && w.spec["correctness"].contains("comparator"))
    rows.emplace_back("definition comparator", Scalar(w.spec["correctness"]["comparator"]));
  if (rows.empty()) return "";
  std::string out = "<section id=\"workload\"><h2>Workload</h2>\n<table class=\"fields\">\n";
  for (auto& [k, v] : rows) out += Row(k, Esc(v));
  return out + "</table></section>\n";
}

std::string Measurements(const Json& s) {
  std::string rows;
  if (s.contains("timing") && s["timing"].is_object()) {
    const Json& t = s["timing"];
    if (t.contains("latencyNs") && t["latencyNs"].is_object()) {
      for (auto it = t["latencyNs"].begin(); it != t["latencyNs"].end(); ++it) {
        std::string v;
        if (it->is_number()) v = human::Duration(it->get<double>());
        else if (it->is_array() && it->size() == 2 && (*it)[0].is_number() && (*it)[1].is_number())
          v = human::Duration((*it)[0].get<double>()) + " – " + human::Duration((*it)[1].get<double>());
        else v = Scalar(*it);
        rows += Row("latency · " + it.key(), Esc(v));
      }
    }
    if (t.contains("samples")) rows += Row("samples", Esc(Scalar(t["samples"])));
  }
  if (s.contains("measurements") && s["measurements"].is_array()) {
    for (const auto& x : s["measurements"]) {
      if (!x.is_object()) continue;
      const Json v = x.value("value", Json());
      const std::string unit = x.value("unit", "");
      std::string key = x.value("metric", "measurement");
      if (x.contains("statistic") && x["statistic"].is_string()) key += " · " + x["statistic"].get<std::string>();
      rows += Row(key, Esc(v.is_number() ? human::Quantity(v.get<double>(), unit) : Scalar(v)));
    }
  }
  if (rows.empty()) return "";
  return "<section id=\"measurements\"><h2>Measurements</h2>\n<table class=\"fields\">\n" + rows + "</table></section>\n";
}

std::string Artifacts(Store& store, const Model& m, const Manifest& run) {
  std::string rows;
  for (const Reference& r : ExtractReferences(run)) {
    if (r.field.rfind("/spec/evidence", 0) != 0 && r.uri.empty()) continue;
    std::string label;
    std::string presence = Presence(store, r.target, &label);
    std::string field = r.field.rfind("/spec/", 0) == 0 ? r.field.substr(6) : r.field;
    std::string target = "<code>" + Esc(ShortDigest(r.target)) + "</code>";
    if (m.Has(RunPage(r.target))) target = Link(m, kSubpageRoot, RunPage(r.target), target);
    rows += Row(field, target + (label.empty() ? "" : " · " + Esc(label)) + " · " + Esc(presence));
  }
  return "<section id=\"artifacts\"><h2>Artifacts</h2>\n" +
         (rows.empty() ? std::string("<p>None.</p>\n") : "<table class=\"fields\">\n" + rows + "</table>\n") +
         "</section>\n";
}

// The Protocol or Environment section of a run page, headed by a link to
// the setting's own page; the same for every run that names it.
const std::string& SettingSection(Store& store, const Model& m, const Json& spec, const char* field, Kind kind,
                                  RunPageCache& cache) {
  static const std::string kNone;
  auto d = Digest::Parse(spec.value(field, ""));
  if (!d.ok()) return kNone;
  auto it = cache.settings.find(*d);
  if (it != cache.settings.end()) return it->second;
  std::string html;
  if (auto man = store.ReadManifest(*d); man.ok()) {
    const bool env = kind == Kind::kExecutionEnvironment;
    const std::string heading = env ? "Environment" : "Protocol";
    html = FieldsSection(env ? "environment" : "protocol", heading, man->spec,
                         Esc(heading) + " " + Link(m, kSubpageRoot, SettingPage(kind, *d), "<span class=\"digest\">" + Esc(ShortDigest(*d)) + "</span>"));
  }
  return cache.settings.emplace(*d, std::move(html)).first->second;
}

std::string SignatureText(const SignatureCheck& sig) {
  std::string who = sig.signer.empty() ? "key " + ShortKeyId(sig.keyid) : sig.signer;
  switch (sig.state) {
    case SignatureState::kTrusted: return who + " (trusted " + std::string(RoleName(*sig.role)) + ")";
    case SignatureState::kUntrusted: return who + " (valid, not trusted)";
    case SignatureState::kRevoked: return who + " (valid, key revoked)";
    case SignatureState::kUnknownKey: return "unknown key " + ShortKeyId(sig.keyid) + " (not checked)";
    case SignatureState::kInvalid: return who + " (INVALID)";
  }
  return who;
}

std::string EvidenceSections(const Evidence& ev) {
  std::string out = "<section id=\"evidence\"><h2>Evidence</h2>\n<table class=\"fields\">\n";
  out += Row("level", "<span id=\"evidence-level\">" + Esc(ev.Label()) + "</span>");
  out += Row("why", Esc(ev.reason));
  out += Row("source present", ev.source_present ? "yes" : "no");
  out += Row("raw evidence present", ev.raw_evidence_present ? "yes" : "no");
  out += "</table></section>\n<section id=\"attestations\"><h2>Attestations</h2>\n";
  if (ev.attestations.empty()) return out + "<p>No attestations yet.</p></section>\n";
  out += "<table><thead><tr><th>predicate</th><th>envelope</th><th>signed by</th><th>details</th></tr></thead><tbody>\n";
  for (const auto& a : ev.attestations) {
    std::string pred = a.predicate ? std::string(PredicateName(*a.predicate))
                                   : (a.predicate_type.empty() ? "?" : a.predicate_type);
    std::string signers;
    for (const auto& sig : a.signatures) signers += (signers.empty() ? "" : "; ") + SignatureText(sig);
    std::string details;
    if (a.fault()) details = "FAULT: " + a.problem();
    const Json& p = a.predicate_body;
    if (p.is_object()) {
      if (p.contains("signedAt") && p["signedAt"].is_string()) details += (details.empty() ? "" : " · ") + p["signedAt"].get<std::string>();
      if (p.contains("rerun") && p["rerun"].is_object()) {
        const Json& r = p["rerun"];
        if (r.contains("latencyNs") && r["latencyNs"].is_number()) details += " · " + human::Duration(r["latencyNs"].get<double>());
        if (r.contains("machine") && r["machine"].is_string()) details += " · on " + r["machine"].get<std::string>();
        if (r.contains("passed") && r["passed"] == false) details += " · re-run FAILED";
      }
      if (p.contains("note") && p["note"].is_string()) details += " · \"" + p["note"].get<std::string>() + "\"";
    }
    out += "<tr>" + Tag("td", pred) + "<td><code>" + Esc(ShortDigest(a.envelope)) + "</code></td>" + Tag("td", signers) +
           Tag("td", details) + "</tr>\n";
  }
  return out + "</tbody></table></section>\n";
}

}  // namespace

Result<std::string> RenderRun(Store& store, const Model& m, const EvidenceEvaluator& evidence, const Digest& d,
                              const RunPlace& place, RunPageCache& cache, std::vector<Digest>* watched) {
  KI_ASSIGN_OR_RETURN(Manifest run, store.ReadManifest(d));
  if (watched) *watched = WatchedObjects(store, run);
  const Json& s = run.spec;
  Json doc = DocumentOf(store, run);
  std::string title;
  if (doc.contains("metadata") && doc["metadata"].is_object()) {
    const Json& md = doc["metadata"];
    if (md.contains("title") && md["title"].is_string()) title = md["title"].get<std::string>();
    else if (md.contains("name") && md["name"].is_string()) title = md["name"].get<std::string>();
  }
  KI_ASSIGN_OR_RETURN(auto facts, catalog::RunFacts(store, d));
  std::optional<Manifest> workload = Load(store, s, "workloadDigest");

  std::string body;
  body += "<h1>Run <span class=\"digest\">" + d.hex().substr(0, 8) + "</span>" +
          (title.empty() ? "" : " · <span id=\"run-title\">" + Esc(title) + "</span>") + "</h1>\n";
  body += "<p class=\"lead\">" + Esc(std::string(KindName(run.kind))) + " · status " + Esc(s.value("status", "?")) + "</p>\n";
  body += Primary(s, place, m, d);
  body += HistoryAndReruns(m, place);
  body += Identity(store, m, run, place, facts, workload);
  if (s.contains("correctness") && s["correctness"].is_object()) {
    Json c = s["correctness"];
    c["result"] = s.value("status", "?");
    body += FieldsSection("correctness", "Correctness", c);
  }
  if (workload) body += WorkloadSection(*workload);
  body += Measurements(s);
  body += SettingSection(store, m, s, "protocolDigest", Kind::kBenchmarkProtocol, cache);
  body += SettingSection(store, m, s, "environmentDigest", Kind::kExecutionEnvironment, cache);
  if (s.contains("sourceNative")) body += FieldsSection("source-native", "Source-native", s["sourceNative"]);
  body += Artifacts(store, m, run);
  if (run.kind == Kind::kBenchmarkRun) {
    KI_ASSIGN_OR_RETURN(Evidence ev, evidence.EvaluateRun(store, run));
    body += EvidenceSections(ev);
  } else {
    KI_ASSIGN_OR_RETURN(Evidence ev, evidence.Evaluate(store, d));
    body += EvidenceSections(ev);
  }
  // The run's canonical manifest; its protocol's and environment's are on
  // their own pages (linked from their sections), not repeated in each of
  // the hundreds of runs that share them.
  body += "<section id=\"manifest\"><h2>Canonical manifest</h2>\n<details><summary>Show manifest</summary><pre>" +
          Esc(doc.dump(2, ' ', false, Json::error_handler_t::replace)) + "</pre></details></section>\n";
  body += "<footer class=\"run\">";
  if (facts && facts->contains("publishedAt") && (*facts)["publishedAt"].is_string())
    body += "Published " + Esc((*facts)["publishedAt"].get<std::string>().substr(0, 10)) + " · ";
  if (place.group && place.group->ranking) {
    const auto& g = place.group->summary;
    body += Link(m, kSubpageRoot, OperationPage(g.operation),
                 "All results for " + Esc(g.operation_name.empty() ? ShortDigest(g.operation) : g.operation_name) + " →") +
            " · ";
  }
  body += "permalink <a class=\"digest\" href=\"" + kSubpageRoot + RunPage(d) + "\">" + Esc(d.str()) + "</a></footer>\n";

  PageParts p;
  p.title = "Run " + d.hex().substr(0, 8) + (title.empty() ? "" : " · " + title);
  p.root = kSubpageRoot;
  p.kind = "run";
  p.body = std::move(body);
  return RenderPage(p);
}

}  // namespace ki::report
