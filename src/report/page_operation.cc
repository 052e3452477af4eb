// An operation's page: the value of each implementation against a
// workload size axis (one line per implementation, and per hardware where
// the operation ran on several), and the operation's groups.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "report/html.h"
#include "report/pages.h"

namespace ki::report {

namespace {

// The axis the plot runs along: the numeric workload axis with the most
// distinct values; on a tie one that names a size people sweep (batch,
// tokens, sequence length), then the first by name. "" when the workloads
// have no numeric axis.
using Axes = std::map<const GroupView*, Json>;  // each group's workload's spec.axes (an object)

std::string SizeAxis(const OperationView& op, const Axes& axes) {
  std::map<std::string, std::set<double>> values;
  for (const GroupView* g : op.groups) {
    const Json& a = axes.at(g);
    for (auto it = a.begin(); it != a.end(); ++it)
      if (it->is_number()) values[it.key()].insert(it->get<double>());
  }
  auto sweeps = [](std::string k) {
    std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    for (const char* w : {"batch", "token", "seq", "len"})
      if (k.find(w) != std::string::npos) return 1;
    return 0;
  };
  std::string best;
  size_t best_n = 0;
  for (const auto& [k, v] : values) {
    if (v.size() > best_n || (v.size() == best_n && sweeps(k) > sweeps(best))) {
      best = k;
      best_n = v.size();
    }
  }
  return best;
}

}  // namespace

Result<std::string> RenderOperation(Store& store, const Model& m, const OperationView& op) {
  const std::string name = op.name.empty() ? ShortDigest(op.digest) : op.name;
  // Read here, not gathered with the model: a workload's axes are a
  // function of its digest, which the page's inputs hold.
  Axes axes;
  for (const GroupView* g : op.groups) {
    Json& a = axes[g] = Json::object();
    auto d = Digest::Parse(g->summary.workload);
    if (!d.ok()) continue;
    auto w = store.ReadManifest(*d);
    if (w.ok()) {
      if (w->spec.contains("axes") && w->spec["axes"].is_object()) a = w->spec["axes"];
    } else if (!w.status().IsNotFound()) {
      return w.status();
    }
  }
  const std::string axis = SizeAxis(op, axes);
  std::set<std::string> hardware;
  for (const GroupView* g : op.groups) hardware.insert(g->summary.hardware);
  const bool per_hardware = hardware.size() > 1;

  // line -> x -> best (lowest) value there.
  struct Point {
    double y;
    std::string href, workload;
  };
  std::map<std::string, std::map<double, Point>> lines;
  std::string unit;
  for (const GroupView* g : op.groups) {
    const Json& a = axes.at(g);
    if (axis.empty() || !a.contains(axis) || !a[axis].is_number()) continue;
    const double x = a[axis].get<double>();
    for (const auto& e : g->ranking->ranked) {
      if (!e.value) continue;
      if (unit.empty()) unit = e.unit;
      if (e.unit != unit) continue;  // one unit per plot
      std::string line = RunLabel(e) + (per_hardware ? " · " + g->summary.hardware : "");
      auto& at = lines[line];
      auto it = at.find(x);
      if (it == at.end() || *e.value < it->second.y)
        at[x] = Point{*e.value, m.Has(RunPage(e.run)) ? kSubpageRoot + RunPage(e.run) : "", g->summary.workload_name};
    }
  }
  Json data;
  if (!lines.empty()) {
    Json jl = Json::array();
    for (const auto& [label, pts] : lines) {
      Json jp = Json::array();
      for (const auto& [x, p] : pts) {
        Json q = {{"x", x}, {"y", p.y}, {"workload", p.workload}};
        if (!p.href.empty()) q["href"] = p.href;
        jp.push_back(std::move(q));
      }
      jl.push_back({{"label", label}, {"points", jp}});
    }
    data = {{"plot", "operation"}, {"axis", axis}, {"unit", unit}, {"lines", jl}};
  }

  std::string body = "<h1>Operation " + Tag("span", name, "id=\"operation-name\"") + "</h1>\n";
  body += "<p class=\"lead\"><code>" + Esc(op.digest) + "</code> · " + std::to_string(op.groups.size()) +
          " comparison groups</p>\n";
  if (!data.is_null()) {
    body += "<h2>Value against " + Esc(axis) + "</h2>\n<p>Each line is one implementation" +
            std::string(per_hardware ? " on one kind of hardware" : "") +
            "; a point is its best ranked value at that " + Esc(axis) + ".</p>\n" +
            "<div class=\"plot\"><canvas id=\"plot\" aria-label=\"value against workload size\"></canvas></div>\n";
  } else {
    body += "<p>The workloads of this operation have no numeric axis: nothing to plot against.</p>\n";
  }
  body += "<h2>Comparison groups</h2>\n<table><thead><tr><th>group</th><th>workload</th>" +
          (axis.empty() ? std::string() : "<th>" + Esc(axis) + "</th>") +
          "<th>hardware</th><th>runs</th><th>#1</th><th>#1 implementation</th></tr></thead><tbody>\n";
  for (const GroupView* g : op.groups) {
    const auto& s = g->summary;
    body += "<tr><td>" + Link(m, kSubpageRoot, g->page, Esc(s.cohort.hex().substr(0, 12)), "class=\"digest\"") + "</td>" +
            Tag("td", s.workload_name);
    if (!axis.empty())
      body += Tag("td", axes.at(g).contains(axis) ? axes.at(g)[axis].dump() : "-", "class=\"num\"");
    body += Tag("td", s.hardware) + Tag("td", std::to_string(s.runs), "class=\"num\"");
    if (s.first) {
      body += Tag("td", ValueText(*s.first), "class=\"num\"") + "<td>" +
              Link(m, kSubpageRoot, RunPage(s.first->run), Esc(RunLabel(*s.first))) + "</td>";
    } else {
      body += "<td>-</td><td></td>";
    }
    body += "</tr>\n";
  }
  body += "</tbody></table>\n";
  PageParts p;
  p.title = "Operation " + name;
  p.root = kSubpageRoot;
  p.kind = "operation";
  p.body = std::move(body);
  p.chart = !data.is_null();
  p.data = std::move(data);
  return RenderPage(p);
}

}  // namespace ki::report
