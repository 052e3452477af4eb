// ki diff A B [--json] [--noise-floor F] [--alpha A] [--fail-on WHAT]: what
// differs between two manifests of one kind; for two runs, whether the
// difference in their timings is real (docs/statistics.md).
#include <cmath>
#include <cstdio>
#include <iostream>

#include "command.h"
#include "ki/catalog.h"
#include "ki/human.h"
#include "ki/run.h"
#include "ki/stats.h"

namespace ki::cli {
namespace {

Json Body(const Manifest& m) {
  return Json{{"apiVersion", kApiVersion}, {"kind", KindName(m.kind)}, {"spec", m.spec}};
}

std::string Brief(const Json& v) {
  std::string s = v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 100) s = s.substr(0, 97) + "...";
  return s;
}

void PrintDiffs(const std::vector<catalog::FieldDiff>& diffs, std::string& out, const std::string& indent = "  ") {
  for (const auto& d : diffs) {
    if (d.a && d.b) out += indent + d.path + ": " + Brief(*d.a) + " → " + Brief(*d.b) + "\n";
    else if (d.b) out += indent + "+ " + d.path + ": " + Brief(*d.b) + "\n";
    else out += indent + "- " + d.path + ": " + Brief(*d.a) + "\n";
  }
}

struct Primary {
  std::optional<double> value;
  std::string unit, statistic;
};

Primary PrimaryOf(const Json& s) {
  Primary p;
  if (auto t = s.find("timing"); t != s.end() && t->is_object()) {
    p.statistic = t->value("primaryStatistic", "");
    p.unit = "ns";
    if (t->contains("latencyNs") && (*t)["latencyNs"].contains(p.statistic) && (*t)["latencyNs"][p.statistic].is_number())
      p.value = (*t)["latencyNs"][p.statistic].get<double>();
  } else if (auto m = s.find("measurements"); m != s.end() && m->is_array() && !m->empty() && (*m)[0].is_object()) {
    const Json& f = (*m)[0];
    p.statistic = f.value("metric", "") + " " + f.value("statistic", "");
    p.unit = f.value("unit", "");
    if (f.contains("value") && f["value"].is_number()) p.value = f["value"].get<double>();
  }
  return p;
}

std::string Show(const Primary& p) {
  if (!p.value) return "none recorded";
  return (p.unit == "ns" ? FormatNs(*p.value) : FormatJcsNumber(*p.value) + " " + p.unit) + " " + p.statistic;
}

struct DiffOptions {
  std::string a, b;
  bool json = false;
  double noise_floor = 0.01, alpha = 0.05;
  std::string fail_on;  // "", slower, faster, different
};

std::optional<std::pair<double, double>> Interval95(const Json& spec) {
  const Json* ci = nullptr;
  if (spec.contains("timing") && spec["timing"].is_object() && spec["timing"].contains("latencyNs") &&
      spec["timing"]["latencyNs"].is_object() && spec["timing"]["latencyNs"].contains("confidence95"))
    ci = &spec["timing"]["latencyNs"]["confidence95"];
  if (!ci || !ci->is_array() || ci->size() != 2 || !(*ci)[0].is_number() || !(*ci)[1].is_number()) return std::nullopt;
  return std::make_pair((*ci)[0].get<double>(), (*ci)[1].get<double>());
}

// The judged comparison of two runs' timings: from raw samples when both
// have them, else from their summaries (untested).
struct Judged {
  stats::Comparison c;
  std::string missing;  // "A", "B" or "A and B": whose samples are missing
  bool comparable = false;  // both have a primary value of one metric
};

Result<Judged> Judge(Store& store, const Json& sa, const Json& sb, const Primary& pa, const Primary& pb,
                     const DiffOptions& o) {
  Judged j;
  stats::CompareOptions co;
  co.alpha = o.alpha;
  co.noise_floor = o.noise_floor;
  j.comparable = pa.value && pb.value && pa.unit == pb.unit && pa.statistic == pb.statistic;
  KI_ASSIGN_OR_RETURN(auto xa, run::SamplesOfRun(store, sa));
  KI_ASSIGN_OR_RETURN(auto xb, run::SamplesOfRun(store, sb));
  if (xa && xb && pa.unit == "ns" && pb.unit == "ns") {
    if (auto c = stats::CompareSamples(*xa, *xb, co)) {
      j.c = *c;
      return j;
    }
  }
  j.missing = !xa && !xb ? "A and B" : !xa ? "A" : !xb ? "B" : "";
  stats::Summary a{pa.value.value_or(0), Interval95(sa)}, b{pb.value.value_or(0), Interval95(sb)};
  j.c = stats::CompareSummaries(a, b, co);
  if (!j.missing.empty()) j.c.words = j.c.words + " (" + j.missing + (j.missing.size() > 1 ? " have" : " has") + " none)";
  if (!j.comparable) j.c.ratio = NAN;
  return j;
}

std::string Num3(double v) { return human::Fixed(v, 3); }

void PrintJudged(const Judged& j, std::string& out) {
  const stats::Comparison& c = j.c;
  if (c.interval && c.test) {
    out += "Judgement (" + std::to_string(c.n_a) + " and " + std::to_string(c.n_b) + " raw samples)\n";
    out += "  median B/A " + Num3(c.ratio) + ", 95% interval " + Num3(c.interval->low) + "-" + Num3(c.interval->high) +
           " (bootstrap, " + std::to_string(c.interval->resamples) + " resamples)\n";
    char p[96];
    std::snprintf(p, sizeof p, "  Mann-Whitney U p = %.3g (two-sided, %s)\n", c.test->p_value,
                  std::string(stats::UMethodName(c.test->method)).c_str());
    out += p;
  } else {
    out += "Judgement\n";
  }
  out += "  " + std::string(stats::VerdictName(c.verdict)) + ": " + c.words + "\n";
}

Json JudgedJson(const Judged& j, const Primary& pa, const Primary& pb) {
  const stats::Comparison& c = j.c;
  auto num = [](const std::optional<double>& v) { return v && std::isfinite(*v) ? Json(*v) : Json(nullptr); };
  Json out = {{"verdict", std::string(stats::VerdictName(c.verdict))},
              {"words", c.words},
              {"ratio", num(std::isfinite(c.ratio) ? std::optional<double>(c.ratio) : std::nullopt)},
              {"ratioOf", c.interval ? "medians" : "primary values"},
              {"alpha", c.alpha},
              {"noiseFloor", c.noise_floor},
              {"samples", {{"a", c.n_a}, {"b", c.n_b}}},
              {"primary", {{"a", num(pa.value)}, {"b", num(pb.value)}, {"unit", pa.unit}, {"statistic", pa.statistic}}}};
  if (c.interval) {
    char seed[24];
    std::snprintf(seed, sizeof seed, "%016llx", static_cast<unsigned long long>(c.interval->seed));
    out["interval"] = Json::array({c.interval->low, c.interval->high});
    out["confidence"] = c.interval->confidence;
    out["resamples"] = c.interval->resamples;
    out["seed"] = seed;
  } else {
    out["interval"] = nullptr;
  }
  if (c.test) {
    out["uTest"] = {{"u1", c.test->u1}, {"pValue", c.test->p_value},
                    {"method", std::string(stats::UMethodName(c.test->method))}, {"ties", c.test->ties}};
  } else {
    out["uTest"] = nullptr;
  }
  out["intervalsOverlap"] = c.intervals_overlap ? Json(*c.intervals_overlap) : Json(nullptr);
  if (!j.missing.empty()) out["samplesMissing"] = j.missing;
  return out;
}

// --fail-on: exit 1 when the verdict is the one asked for, 0 when not; a
// verdict that was not tested cannot gate (exit 4, after the output).
Result<int> Gate(const DiffOptions& o, const stats::Comparison& c) {
  if (c.verdict == stats::Verdict::kUntested)
    return Status::InvalidInput("--fail-on " + o.fail_on + " needs raw samples of both runs: " + c.words);
  const bool hit = (o.fail_on == "slower" && c.verdict == stats::Verdict::kSlower) ||
                   (o.fail_on == "faster" && c.verdict == stats::Verdict::kFaster) ||
                   (o.fail_on == "different" &&
                    (c.verdict == stats::Verdict::kSlower || c.verdict == stats::Verdict::kFaster));
  return hit ? 1 : 0;
}

// One referenced manifest of each run (implementation, workload, ...).
void Referenced(Store& store, const Json& sa, const Json& sb, const char* field, const char* title, std::string& out) {
  std::string a = sa.value(field, ""), b = sb.value(field, "");
  if (a == b) {
    out += std::string(title) + ": same (" + (a.empty() ? "none" : a.substr(0, 23) + "…") + ")\n";
    return;
  }
  out += std::string(title) + ": differs\n  A " + (a.empty() ? "none" : a) + "\n  B " + (b.empty() ? "none" : b) + "\n";
  auto da = Digest::Parse(a), db = Digest::Parse(b);
  if (!da.ok() || !db.ok()) return;
  auto ma = store.ReadManifest(*da), mb = store.ReadManifest(*db);
  if (!ma.ok() || !mb.ok()) {
    out += "  (" + std::string(!ma.ok() ? "A's" : "B's") + " is not in this store; fields cannot be compared)\n";
    return;
  }
  PrintDiffs(catalog::FieldDiffs(ma->spec, mb->spec, "spec"), out, "  ");
}

RunFn SetupDiff(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<DiffOptions>();
  sub->add_option("a", o->a, "first manifest (REF)")->required();
  sub->add_option("b", o->b, "second manifest (REF)")->required();
  sub->add_flag("--json", o->json,
                "print JSON: an RFC 6902 JSON Patch from A's identity body to B's; for two runs an object with "
                "the judged comparison and the patch");
  sub->add_option("--noise-floor", o->noise_floor,
                  "two runs: a significant difference smaller than this fraction is noise (default 0.01)")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--alpha", o->alpha, "two runs: significance level of the U test (default 0.05)")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--fail-on", o->fail_on,
                  "two runs: exit 1 when the verdict is this (slower, faster, or different: either), else 0")
      ->check(CLI::IsMember({"slower", "faster", "different"}));
  return [o, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
    KI_ASSIGN_OR_RETURN(Digest da, store->Resolve(o->a));
    KI_ASSIGN_OR_RETURN(Digest db, store->Resolve(o->b));
    // A corrupt object would exit 1 by the common table, which for diff
    // means "the objects differ": a script would take damage for a
    // difference. It is trouble, as diff(1)'s 2 is: exit 5 (docs/cli.md).
    auto read = [&](const Digest& d) -> Result<Manifest> {
      auto m = store->ReadManifest(d);
      if (!m.ok() && m.status().IsCorruption())
        return Status::IOError(m.status().message() + " (ki verify " + d.str() + " tells more)");
      return m;
    };
    KI_ASSIGN_OR_RETURN(Manifest ma, read(da));
    KI_ASSIGN_OR_RETURN(Manifest mb, read(db));
    if (ma.kind != mb.kind) {
      return Status::InvalidInput("cannot diff a " + std::string(KindName(ma.kind)) + " with a " +
                                  std::string(KindName(mb.kind)) + ": ki diff compares two manifests of one kind");
    }
    const bool runs = ma.kind == Kind::kBenchmarkRun;
    if (!o->fail_on.empty() && !runs)
      return Status::InvalidInput("--fail-on judges two runs' timings; these are " + std::string(KindName(ma.kind)) +
                                  "s");
    int rc = da == db ? 0 : 1;
    std::optional<Judged> judged;
    Primary pa, pb;
    if (runs) {
      pa = PrimaryOf(ma.spec);
      pb = PrimaryOf(mb.spec);
      KI_ASSIGN_OR_RETURN(judged, Judge(*store, ma.spec, mb.spec, pa, pb, *o));
    }
    auto finish = [&]() -> Result<int> { return o->fail_on.empty() ? Result<int>(rc) : Gate(*o, judged->c); };
    if (o->json) {
      Json patch = catalog::JsonPatch(Body(ma), Body(mb));
      if (!runs) {
        PrintJson(patch);
        return rc;
      }
      PrintJson(Json{{"a", da.str()}, {"b", db.str()}, {"kind", "BenchmarkRun"}, {"sameIdentity", da == db},
                     {"comparison", JudgedJson(*judged, pa, pb)}, {"patch", patch}});
      return finish();
    }
    std::string out;
    out += "A " + std::string(KindName(ma.kind)) + " " + da.str() + " " + ma.name() + "\n";
    out += "B " + std::string(KindName(mb.kind)) + " " + db.str() + " " + mb.name() + "\n";
    if (rc == 0) {
      std::cout << out << "same identity\n";
      return finish();
    }
    KI_ASSIGN_OR_RETURN(auto doc_a, store->ReadDocument(da));
    KI_ASSIGN_OR_RETURN(auto doc_b, store->ReadDocument(db));
    auto name_of = [](const std::optional<Json>& doc) {
      return doc && doc->contains("metadata") && (*doc)["metadata"].is_object() ? (*doc)["metadata"].value("name", "")
                                                                                : std::string();
    };
    // Heading lines use metadata names when the store holds the documents.
    if (!name_of(doc_a).empty() || !name_of(doc_b).empty()) {
      out = "A " + std::string(KindName(ma.kind)) + " " + da.str() + " " + name_of(doc_a) + "\n" + "B " +
            std::string(KindName(mb.kind)) + " " + db.str() + " " + name_of(doc_b) + "\n";
    }
    out += "\n";
    if (!runs) {
      PrintDiffs(catalog::FieldDiffs(ma.spec, mb.spec, "spec"), out, "");
      std::cout << out;
      return rc;
    }
    const Json& sa = ma.spec;
    const Json& sb = mb.spec;
    out += "Primary measurement\n  A " + Show(pa) + "\n  B " + Show(pb) + "\n";
    if (pa.value && pb.value && pa.unit == pb.unit && pa.statistic == pb.statistic && *pa.value > 0 && *pb.value > 0) {
      char line[160];
      double ratio = *pb.value / *pa.value;
      if (ratio == 1) {
        std::snprintf(line, sizeof line, "  B/A = 1.000: equal\n");
      } else {
        bool b_faster = ratio < 1;  // lower is better (latency, time-based scores)
        std::snprintf(line, sizeof line, "  B/A = %.3f: %s is %.2fx faster\n", ratio, b_faster ? "B" : "A",
                      b_faster ? 1 / ratio : ratio);
      }
      out += line;
    } else if (pa.value && pb.value) {
      out += "  (different metrics or units: no ratio)\n";
    }
    PrintJudged(*judged, out);
    out += "Status\n  A " + sa.value("status", "?") + " · B " + sb.value("status", "?") + "\n";
    auto corr = catalog::FieldDiffs(sa.value("correctness", Json::object()), sb.value("correctness", Json::object()),
                                    "correctness");
    out += "Correctness" + std::string(corr.empty() ? ": same\n" : "\n");
    PrintDiffs(corr, out);
    Referenced(*store, sa, sb, "implementationDigest", "Implementation", out);
    Referenced(*store, sa, sb, "workloadDigest", "Workload", out);
    Referenced(*store, sa, sb, "protocolDigest", "Protocol", out);
    Referenced(*store, sa, sb, "environmentDigest", "Environment", out);
    // Everything else in the run itself.
    Json ra = sa, rb = sb;
    for (const char* f : {"status", "correctness", "implementationDigest", "workloadDigest", "protocolDigest",
                          "environmentDigest"}) {
      ra.erase(f);
      rb.erase(f);
    }
    auto rest = catalog::FieldDiffs(ra, rb, "spec");
    out += "Other differences" + std::string(rest.empty() ? ": none\n" : "\n");
    PrintDiffs(rest, out);
    std::cout << out;
    return finish();
  };
}

KI_REGISTER_COMMAND(diff, {"diff", "Show what differs between two manifests of one kind", SetupDiff, 72});

}  // namespace
}  // namespace ki::cli
