// A series page: one implementation's runs in one comparison group over
// time (what `ki log GROUP --implementation X --regressions` prints), with
// each run's value and interval, the level of each segment between change
// points, and the change points themselves. The group page's History plot
// draws the same series.
#include <cmath>
#include <cstdio>

#include <map>

#include "catalog/time.h"
#include "ki/human.h"
#include "report/html.h"
#include "report/pages.h"

namespace ki::report {

namespace {

std::string Pct(double ratio) { return human::PercentChange(ratio); }
std::string F3(double v) { return human::Fixed(v, 3); }

catalog::RankEntry Quantity(double v, const std::string& unit) {
  catalog::RankEntry e;
  e.value = v;
  e.unit = unit;
  return e;
}

}  // namespace

std::string ChangeText(const stats::ChangePoint& c, const std::string& unit) {
  return Pct(c.ratio) + " (" + (c.ratio > 1 ? "slower" : "faster") + "; median " + ValueText(Quantity(c.before, unit)) +
         " → " + ValueText(Quantity(c.after, unit)) + ", ratio " + F3(c.ratio) + ", 95% interval " + F3(c.low) + "–" +
         F3(c.high) + ")";
}

SeriesChart ChartOfSeries(const Model& m, const SeriesView& s, bool intervals) {
  SeriesChart out;
  std::vector<double> values;
  Json points = Json::array(), bars = Json::array();
  for (size_t i : s.timed) {
    const catalog::RankEntry& e = *s.runs[i];
    values.push_back(*e.value);
    out.unit = e.unit;
    const double x = catalog::ParseTime(e.observed_at) * 1000;
    Json p = {{"x", x}, {"y", *e.value}};
    if (m.Has(RunPage(e.run))) p["href"] = kSubpageRoot + RunPage(e.run);
    points.push_back(std::move(p));
    if (intervals && e.interval) {
      // A vertical segment per interval; the null ends it.
      bars.push_back({{"x", x}, {"y", e.interval->first}});
      bars.push_back({{"x", x}, {"y", e.interval->second}});
      bars.push_back({{"x", x}, {"y", nullptr}});
    }
  }
  out.seg = s.Changes();
  Json changes = Json::array(), levels = Json::array();
  if (out.seg && !out.seg->changes.empty()) {
    // Each segment's level (the median either side of its changes), drawn
    // as a step from its first run to its last.
    const auto& cs = out.seg->changes;
    size_t start = 0;
    for (size_t k = 0; k <= cs.size(); ++k) {
      const size_t end = k < cs.size() ? cs[k].index : values.size();
      const double level = k < cs.size() ? cs[k].before : cs[k - 1].after;
      levels.push_back({{"x", points[start]["x"]}, {"y", level}});
      levels.push_back({{"x", points[end - 1]["x"]}, {"y", level}});
      levels.push_back({{"x", points[end - 1]["x"]}, {"y", nullptr}});
      start = end;
    }
    for (const auto& c : cs) changes.push_back(points[c.index]);
  }
  out.data = {{"label", s.label}, {"points", std::move(points)}, {"levels", std::move(levels)},
              {"changes", std::move(changes)}};
  if (intervals) out.data["intervals"] = std::move(bars);
  return out;
}

std::string RenderSeries(const Model& m, const SeriesView& s) {
  const GroupView& g = *s.group;
  const auto& gs = g.summary;
  SeriesChart chart = ChartOfSeries(m, s, /*intervals=*/true);
  const std::string opname = gs.operation_name.empty() ? ShortDigest(gs.operation) : gs.operation_name;
  std::string body;
  body += "<h1>History of " + Tag("span", s.label, "id=\"series-label\"") + "</h1>\n";
  body += "<p class=\"lead\">in comparison group " +
          Link(m, kSubpageRoot, g.page, "<span class=\"digest\">" + Esc(gs.cohort.hex().substr(0, 12)) + "</span>", "id=\"series-group\"") +
          " · " + Link(m, kSubpageRoot, OperationPage(gs.operation), Esc(opname)) + " · " +
          Esc(gs.workload_name.empty() ? ShortDigest(gs.workload) : gs.workload_name) + " · " +
          Esc(gs.hardware.empty() ? "unknown hardware" : gs.hardware) + "</p>\n";
  const size_t n_changes = chart.seg ? chart.seg->changes.size() : 0;
  body += "<table class=\"fields\">\n";
  body += Row("runs", std::to_string(s.runs.size()) + " (" + std::to_string(s.timed.size()) + " timed, in the plot)");
  if (chart.seg) {
    char noise[32];
    std::snprintf(noise, sizeof noise, "%.2f%%", chart.seg->noise * 100);
    body += Row("change points", "<span id=\"series-changes\">" + std::to_string(n_changes) + "</span> (noise " + noise + ")");
  }
  if (s.by_implementation) {
    body += Row("implementation", Esc(s.label));
    body += Row("from the command line", "<code>ki log " + Esc(gs.cohort.str()) + " --implementation " +
                                             Esc(s.label) + " --regressions</code>");
  } else {
    body += Row("runs named", Esc(s.label) + " (this store lacks their implementation)");
    body += Row("from the command line", "<code>ki log " + Esc(gs.cohort.str()) +
                                             " --regressions</code> (every run of the group)");
  }
  body += "</table>\n";
  body += "<div class=\"plot\"><canvas id=\"plot\" aria-label=\"values over time with change points\"></canvas></div>\n";
  body += "<p>Each point is a run (its 95% interval as a vertical bar where it has one); a line is the median level "
          "between change points (docs/statistics.md, \"Change points\"); a triangle marks the first run of a new level.</p>\n";

  // The runs in time order, each change point on a line of its own before
  // the run that starts the new level, as ki log prints them.
  std::map<size_t, const stats::ChangePoint*> change_at;  // index into s.runs
  if (chart.seg)
    for (const auto& c : chart.seg->changes) change_at[s.timed[c.index]] = &c;
  body += "<h2>Runs</h2>\n<table id=\"series-runs\"><thead><tr><th>observed</th><th>value</th><th>95% interval</th>"
          "<th>rank</th><th>evidence</th><th>status</th><th>run</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < s.runs.size(); ++i) {
    const catalog::RankEntry& e = *s.runs[i];
    if (auto it = change_at.find(i); it != change_at.end())
      body += "<tr class=\"change\"><td colspan=\"7\">change point: " + Esc(ChangeText(*it->second, chart.unit)) +
              "</td></tr>\n";
    std::string rank = e.rank > 0 ? (e.tied_with_previous ? "=" : "") + std::to_string(e.rank) : "-";
    std::string reasons;
    for (const auto& x : e.reasons) reasons += (reasons.empty() ? "" : ", ") + x;
    body += "<tr data-run=\"" + e.run.str() + "\">" + Tag("td", e.observed_at) + Tag("td", ValueText(e), "class=\"value num\"") +
            Tag("td", IntervalText(e), "class=\"num\"") +
            Tag("td", rank + (reasons.empty() ? "" : " (" + reasons + ")"), "class=\"num\"") +
            Tag("td", std::string(catalog::EvidenceName(e.evidence))) + Tag("td", e.status) + "<td>" +
            Link(m, kSubpageRoot, RunPage(e.run), Esc(ShortDigest(e.run)), "class=\"digest\"") + "</td></tr>\n";
  }
  body += "</tbody></table>\n";

  PageParts p;
  p.title = "History of " + s.label + " · group " + gs.cohort.hex().substr(0, 12);
  p.root = kSubpageRoot;
  p.kind = "series";
  p.body = std::move(body);
  p.chart = true;
  p.data = {{"plot", "series"}, {"unit", chart.unit}, {"series", Json::array({std::move(chart.data)})}};
  return RenderPage(p);
}

}  // namespace ki::report
