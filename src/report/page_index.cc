// The index: operations, hardware, every comparison group (runs, #1 and
// its value) with client-side filtering, and the most recent records.
#include <algorithm>
#include <map>

#include "catalog/time.h"
#include "report/html.h"
#include "report/pages.h"

namespace ki::report {

namespace {

constexpr size_t kRecentRecords = 20;

struct Count {
  uint64_t groups = 0, runs = 0;
};

std::string GroupsTable(const Model& m) {
  std::string out =
      "<table id=\"groups\" class=\"filterable\"><thead><tr><th>group</th><th>kind</th><th>operation</th>"
      "<th>workload</th><th>hardware</th><th>runs</th><th>#1</th><th>#1 implementation</th></tr></thead><tbody>\n";
  for (const auto& g : m.groups) {
    const auto& s = g.summary;
    out += "<tr data-kind=\"" + Esc(s.kind) + "\" data-hw=\"" + Esc(s.hardware) + "\"><td>" +
           Link(m, "", g.page, Esc(s.cohort.hex().substr(0, 12)), "class=\"digest\"") + "</td>";
    out += Tag("td", s.kind);
    const std::string opname = s.operation_name.empty() ? ShortDigest(s.operation) : s.operation_name;
    out += "<td>" + (s.kind == "kernel" ? Link(m, "", OperationPage(s.operation), Esc(opname)) : Esc(opname)) + "</td>";
    out += Tag("td", s.workload_name.empty() ? ShortDigest(s.workload) : s.workload_name);
    out += Tag("td", s.hardware.empty() ? "-" : s.hardware);
    out += Tag("td", std::to_string(s.runs), "class=\"num\"");
    if (s.first) {
      out += Tag("td", ValueText(*s.first), "class=\"num\"");
      out += "<td>" + Link(m, "", RunPage(s.first->run), Esc(RunLabel(*s.first))) + "</td>";
    } else {
      out += "<td>-</td><td></td>";
    }
    out += "</tr>\n";
  }
  out += "</tbody></table>\n";
  return out;
}

std::string RecentRecords(const Model& m) {
  std::string out;
  // Recent records: the newest events of every group's record history.
  struct Rec {
    const GroupView* g;
    const catalog::RecordEvent* ev;
  };
  std::vector<Rec> recs;
  for (const auto& g : m.groups)
    if (g.records)
      for (const auto& ev : g.records->events) recs.push_back({&g, &ev});
  std::sort(recs.begin(), recs.end(), [](const Rec& a, const Rec& b) {
    if (int c = catalog::CompareTimes(a.ev->at, b.ev->at); c != 0) return c > 0;
    return a.ev->run < b.ev->run;
  });
  if (recs.size() > kRecentRecords) recs.resize(kRecentRecords);
  out += "<h2 id=\"records\">Recent records</h2>\n";
  if (recs.empty()) {
    out += "<p>No records.</p>\n";
  } else {
    out += "<table><thead><tr><th>at</th><th>operation</th><th>group</th><th>value</th><th>run</th></tr></thead><tbody>\n";
    for (const Rec& r : recs) {
      catalog::RankEntry v;
      v.value = r.ev->value;
      v.unit = r.g->ranking && !r.g->ranking->ranked.empty() ? r.g->ranking->ranked.front().unit : "";
      out += "<tr>" + Tag("td", r.ev->at.substr(0, 10)) + Tag("td", r.g->summary.operation_name) + "<td>" +
              Link(m, "", r.g->page, Esc(r.g->summary.cohort.hex().substr(0, 12)), "class=\"digest\"") + "</td>" +
              Tag("td", ValueText(v), "class=\"num\"") + "<td>" +
              Link(m, "", RunPage(r.ev->run), Esc(ShortDigest(r.ev->run)), "class=\"digest\"") + "</td></tr>\n";
    }
    out += "</tbody></table>\n";
  }
  return out;
}

}  // namespace

std::string RenderIndex(const Model& m) {
  std::map<std::string, Count> hardware;
  uint64_t kernel = 0, serving = 0;
  for (const auto& g : m.groups) {
    (g.summary.kind == "kernel" ? kernel : serving)++;
    Count& c = hardware[g.summary.hardware.empty() ? "-" : g.summary.hardware];
    c.groups++;
    c.runs += g.summary.runs;
  }
  std::string body;
  body += "<h1>ki report</h1>\n<p class=\"lead\">" + std::to_string(m.groups.size()) + " comparison groups (" +
          std::to_string(kernel) + " kernel, " + std::to_string(serving) + " serving) · " +
          std::to_string(m.runs.size()) + " runs · " + std::to_string(m.operations.size()) + " operations · " +
          std::to_string(hardware.size()) + " kinds of hardware</p>\n";

  body += "<h2 id=\"operations\">Operations</h2>\n<details><summary>" + std::to_string(m.operations.size()) +
          " operations</summary>\n<table><thead><tr><th>operation</th><th>groups</th><th>runs</th></tr></thead><tbody>\n";
  std::vector<const OperationView*> ops;
  for (const auto& [d, op] : m.operations) ops.push_back(&op);
  std::sort(ops.begin(), ops.end(), [](const OperationView* a, const OperationView* b) {
    return a->name != b->name ? a->name < b->name : a->digest < b->digest;
  });
  for (const OperationView* op : ops) {
    uint64_t runs = 0;
    for (const GroupView* g : op->groups) runs += g->summary.runs;
    body += "<tr><td>" + Link(m, "", op->page, Esc(op->name.empty() ? ShortDigest(op->digest) : op->name)) + "</td>" +
            Tag("td", std::to_string(op->groups.size()), "class=\"num\"") + Tag("td", std::to_string(runs), "class=\"num\"") +
            "</tr>\n";
  }
  body += "</tbody></table></details>\n";

  body += "<h2 id=\"hardware\">Hardware</h2>\n<details><summary>" + std::to_string(hardware.size()) +
          " kinds of hardware (serving groups: their topology)</summary>\n"
          "<table><thead><tr><th>hardware</th><th>groups</th><th>runs</th></tr></thead><tbody>\n";
  for (const auto& [hw, c] : hardware) {
    body += "<tr>" + Tag("td", hw) + Tag("td", std::to_string(c.groups), "class=\"num\"") +
            Tag("td", std::to_string(c.runs), "class=\"num\"") + "</tr>\n";
  }
  body += "</tbody></table></details>\n";
  body += RecentRecords(m);

  body += "<h2 id=\"comparison-groups\">Comparison groups</h2>\n<form class=\"filters\" role=\"search\">"
          "<input id=\"filter\" type=\"search\" placeholder=\"filter: operation, workload, implementation…\" "
          "aria-label=\"filter groups\">"
          "<select id=\"filter-hw\" aria-label=\"hardware\"><option value=\"\">any hardware</option>";
  for (const auto& [hw, c] : hardware) body += "<option value=\"" + Esc(hw == "-" ? "" : hw) + "\">" + Esc(hw) + "</option>";
  body += "</select><select id=\"filter-kind\" aria-label=\"kind\"><option value=\"\">kernel and serving</option>"
          "<option value=\"kernel\">kernel</option><option value=\"serving\">serving</option></select>"
          " <output id=\"filter-count\">" + std::to_string(m.groups.size()) + " groups</output></form>\n";
  body += GroupsTable(m);

  PageParts p;
  p.title = "Index";
  p.kind = "index";
  p.body = std::move(body);
  return RenderPage(p);
}

}  // namespace ki::report
