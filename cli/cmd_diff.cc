// ki diff A B [--json]: what differs between two manifests of one kind.
#include <cstdio>
#include <iostream>

#include "command.h"
#include "ki/catalog.h"

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

RunFn Setup(CLI::App* sub, GlobalOptions* g) {
  auto a = std::make_shared<std::string>(), b = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  sub->add_option("a", *a, "first manifest (REF)")->required();
  sub->add_option("b", *b, "second manifest (REF)")->required();
  sub->add_flag("--json", *json, "print an RFC 6902 JSON Patch from A's identity body to B's");
  return [a, b, json, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
    KI_ASSIGN_OR_RETURN(Digest da, store->Resolve(*a));
    KI_ASSIGN_OR_RETURN(Digest db, store->Resolve(*b));
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
    int rc = da == db ? 0 : 1;
    if (*json) {
      PrintJson(catalog::JsonPatch(Body(ma), Body(mb)));
      return rc;
    }
    std::string out;
    out += "A " + std::string(KindName(ma.kind)) + " " + da.str() + " " + ma.name() + "\n";
    out += "B " + std::string(KindName(mb.kind)) + " " + db.str() + " " + mb.name() + "\n";
    if (rc == 0) {
      std::cout << out << "same identity\n";
      return 0;
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
    if (ma.kind != Kind::kBenchmarkRun) {
      PrintDiffs(catalog::FieldDiffs(ma.spec, mb.spec, "spec"), out, "");
      std::cout << out;
      return rc;
    }
    const Json& sa = ma.spec;
    const Json& sb = mb.spec;
    Primary pa = PrimaryOf(sa), pb = PrimaryOf(sb);
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
    return rc;
  };
}

KI_REGISTER_COMMAND(diff, {"diff", "Show what differs between two manifests of one kind", Setup, 72});

}  // namespace
}  // namespace ki::cli
