// A protocol's or an execution environment's page: its fields, the
// comparison groups measured under it (for an environment: what ran on
// that hardware), and its canonical manifest. Run pages link here instead
// of repeating these manifests.
#include "ki/human.h"
#include "report/html.h"
#include "report/pages.h"

namespace ki::report {

Result<std::string> RenderSetting(Store& store, const Model& m, const SettingView& v) {
  KI_ASSIGN_OR_RETURN(Manifest man, store.ReadManifest(v.digest));
  Json doc = DocumentOf(store, man);
  std::string name = NameOfManifest(doc);
  const bool env = v.kind == Kind::kExecutionEnvironment;
  std::string body = "<h1>" + Esc(std::string(KindName(v.kind))) + " " + Tag("span", name.empty() ? ShortDigest(v.digest) : name, "id=\"setting-name\"") + "</h1>\n";
  body += "<p class=\"lead\"><code>" + Esc(v.digest.str()) + "</code> · " + std::to_string(v.groups.size()) +
          " comparison groups</p>\n";
  body += FieldsSection("fields", env ? "Environment" : "Protocol", man.spec);
  body += "<h2>Comparison groups</h2>\n<table><thead><tr><th>group</th><th>operation</th><th>workload</th>"
          "<th>runs</th><th>#1</th><th>#1 implementation</th></tr></thead><tbody>\n";
  for (const GroupView* g : v.groups) {
    const auto& s = g->summary;
    body += "<tr><td>" + Link(m, kSubpageRoot, g->page, Esc(s.cohort.hex().substr(0, 12)), "class=\"digest\"") + "</td><td>" +
            Link(m, kSubpageRoot, OperationPage(s.operation), Esc(s.operation_name.empty() ? ShortDigest(s.operation) : s.operation_name)) +
            "</td>" + Tag("td", s.workload_name) + Tag("td", std::to_string(s.runs), "class=\"num\"");
    if (s.first) {
      body += Tag("td", ValueText(*s.first), "class=\"num\"") + "<td>" +
              Link(m, kSubpageRoot, RunPage(s.first->run), Esc(RunLabel(*s.first))) + "</td>";
    } else {
      body += "<td>-</td><td></td>";
    }
    body += "</tr>\n";
  }
  body += "</tbody></table>\n";
  body += "<section id=\"manifest\"><h2>Canonical manifest</h2>\n<pre>" +
          Esc(doc.dump(2, ' ', false, Json::error_handler_t::replace)) + "</pre></section>\n";
  PageParts p;
  p.title = std::string(KindName(v.kind)) + " " + (name.empty() ? v.digest.hex().substr(0, 12) : name);
  p.root = kSubpageRoot;
  p.kind = env ? "environment" : "protocol";
  p.body = std::move(body);
  return RenderPage(p);
}

}  // namespace ki::report
