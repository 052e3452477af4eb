// A comparison group's page: what the group compares, the ranking-v1
// table, a plot of every ranked value with its 95% interval, the
// ineligible runs and the record history. Serving groups list their runs.
#include <cmath>
#include <cstdio>

#include <algorithm>
#include <map>

#include "catalog/time.h"
#include "ki/human.h"
#include "ki/stats.h"
#include "report/html.h"
#include "report/pages.h"

namespace ki::report {

namespace {

std::string RunCell(const Model& m, const catalog::RankEntry& e) {
  return Link(m, kSubpageRoot, RunPage(e.run), Esc(ShortDigest(e.run)), "class=\"digest\"") + " " + Esc(e.name.empty() ? e.id : e.name);
}

std::string RankedTable(const Model& m, const GroupView& g) {
  const auto& r = *g.ranking;
  std::string out =
      "<table class=\"ranking\"><thead><tr><th>rank</th><th>value</th><th>95% interval</th><th>evidence</th>"
      "<th>implementation</th><th>hardware</th><th>observed</th><th>run</th></tr></thead><tbody>\n";
  for (const auto& e : r.ranked) {
    out += "<tr data-run=\"" + e.run.str() + "\">";
    out += Tag("td", (e.tied_with_previous ? "=" : "") + std::to_string(e.rank), "class=\"rank num\"");
    out += Tag("td", ValueText(e), "class=\"value num\"");
    out += Tag("td", IntervalText(e), "class=\"num\"");
    out += Tag("td", std::string(catalog::EvidenceName(e.evidence)) + (m.disputed.count(e.run) ? ", disputed" : ""));
    out += Tag("td", e.implementation.empty() ? "-" : e.implementation);
    out += Tag("td", g.summary.hardware.empty() ? "-" : g.summary.hardware);
    out += Tag("td", e.observed_at.substr(0, 10));
    out += "<td>" + RunCell(m, e) + "</td></tr>\n";
  }
  out += "</tbody></table>\n";
  return out;
}

Json PlotData(const Model& m, const GroupView& g) {
  Json points = Json::array();
  std::string unit;
  for (const auto& e : g.ranking->ranked) {
    if (!e.value) continue;
    unit = e.unit;
    Json p = {{"label", "#" + std::to_string(e.rank) + " " + RunLabel(e)}, {"value", *e.value}};
    if (e.interval) p["interval"] = {e.interval->first, e.interval->second};
    if (m.Has(RunPage(e.run))) p["href"] = kSubpageRoot + RunPage(e.run);
    points.push_back(std::move(p));
  }
  return {{"plot", "group"}, {"unit", unit}, {"points", points}};
}

// The group's series (model.h: each implementation with at least
// kMinSeriesRuns timed runs, as `ki log GROUP --implementation X` lists
// them): the kMaxSeries longest in one plot with their change points, and
// every one linked to its own page.
constexpr size_t kMaxSeries = 8;

struct History {
  std::string html;
  Json data;  // null: no series
};

History HistoryOf(const Model& m, const GroupView& g) {
  if (g.series.empty()) return {};
  History h;
  Json js = Json::array();
  std::string rows, list;
  std::string unit;
  for (size_t k = 0; k < g.series.size(); ++k) {
    const SeriesView& s = *g.series[k];
    const catalog::RankEntry& newest = *s.runs[s.timed.back()];
    std::string changes = "-";
    {
      SeriesChart c = ChartOfSeries(m, s, /*intervals=*/false);
      if (k == 0) unit = c.unit;
      if (c.seg) {
        changes = std::to_string(c.seg->changes.size());
        for (const auto& cp : c.seg->changes) {
          const catalog::RankEntry& first = *s.runs[s.timed[cp.index]];
          catalog::RankEntry before, after;
          before.unit = after.unit = c.unit;
          before.value = cp.before;
          after.value = cp.after;
          char ratio[64];
          std::snprintf(ratio, sizeof ratio, "%.3f (95%% %.3f – %.3f)", cp.ratio, cp.low, cp.high);
          rows += "<tr>" + Tag("td", s.label) + Tag("td", first.observed_at.substr(0, 10)) +
                  Tag("td", ValueText(before), "class=\"num\"") + Tag("td", ValueText(after), "class=\"num\"") +
                  Tag("td", ratio) + "<td>" +
                  Link(m, kSubpageRoot, RunPage(first.run), Esc(ShortDigest(first.run)), "class=\"digest\"") + "</td></tr>\n";
        }
      }
      if (k < kMaxSeries && c.unit == unit) js.push_back(std::move(c.data));  // one unit per plot
    }
    list += "<tr><td>" + Link(m, kSubpageRoot, s.page, Esc(s.label), "class=\"series-link\"") + "</td>" +
            Tag("td", std::to_string(s.runs.size()), "class=\"num\"") + Tag("td", changes, "class=\"num\"") +
            Tag("td", newest.observed_at.substr(0, 10)) + Tag("td", ValueText(newest), "class=\"num\"") + "</tr>\n";
  }
  h.data = {{"unit", unit}, {"series", js}};
  h.html = "<h2>History</h2>\n<p>Each implementation with at least " + std::to_string(kMinSeriesRuns) +
           " timed runs here, in time order, with the change points of its values (docs/statistics.md)" +
           (g.series.size() > kMaxSeries ? "; the plot shows the " + std::to_string(kMaxSeries) + " with the most runs"
                                          : std::string()) +
           ".</p>\n"
           "<div class=\"plot\"><canvas id=\"history\" aria-label=\"values over time with change points\"></canvas></div>\n";
  h.html += rows.empty() ? "<p>No change point.</p>\n"
                         : "<table id=\"changes\"><thead><tr><th>implementation</th><th>from</th><th>before</th><th>after</th>"
                           "<th>after / before</th><th>first run</th></tr></thead><tbody>\n" + rows + "</tbody></table>\n";
  h.html += "<table id=\"series\"><thead><tr><th>series</th><th>runs</th><th>change points</th><th>newest</th>"
            "<th>newest value</th></tr></thead><tbody>\n" + list + "</tbody></table>\n";
  return h;
}

}  // namespace

std::string RenderGroup(const Model& m, const GroupView& g) {
  const auto& s = g.summary;
  std::string body;
  const std::string opname = s.operation_name.empty() ? ShortDigest(s.operation) : s.operation_name;
  body += "<h1>Comparison group <span class=\"digest\">" + Esc(ShortDigest(s.cohort)) + "</span></h1>\n";
  body += "<p class=\"lead\">" +
          Link(m, kSubpageRoot, OperationPage(s.operation), Esc(opname)) + " · " +
          Esc(s.workload_name.empty() ? ShortDigest(s.workload) : s.workload_name) + " · " +
          Esc(s.hardware.empty() ? "unknown hardware" : s.hardware) + "</p>\n";
  body += "<table class=\"fields\">\n";
  body += Row("group key", "<code id=\"group-key\">" + Esc(s.cohort.str()) + "</code>");
  body += Row("kind", Esc(s.kind));
  body += Row("metric", Esc(s.metric));
  if (g.ranking) {
    const auto& r = *g.ranking;
    body += Row("policy", Esc(std::string(catalog::kRankingPolicy)) + " · " +
                              (r.source_native ? "source-native (ties on equal values only)"
                                               : "strict (overlapping 95% intervals tie)"));
    for (const char* part : {"operation", "workload", "protocol", "environment", "correctness"}) {
      if (r.description.contains(part) && r.description[part].is_string())
        body += Row(part, "<code>" + Esc(r.description[part].get<std::string>()) + "</code>");
    }
    body += Row("runs", std::to_string(r.ranked.size()) + " ranked, " + std::to_string(r.ineligible.size()) +
                            " ineligible");
  } else {
    body += Row("runs", std::to_string(g.members.size()));
  }
  body += "</table>\n";

  Json data;
  if (g.ranking) {
    const auto& r = *g.ranking;
    body += "<h2>Ranking (" + Esc(std::string(catalog::kRankingPolicy)) + ")</h2>\n";
    if (r.ranked.empty()) {
      body += "<p>No run of this group is ranked.</p>\n";
    } else {
      body += "<div class=\"plot\"><canvas id=\"plot\" aria-label=\"ranked values with their intervals\"></canvas></div>\n";
      body += RankedTable(m, g);
      data = PlotData(m, g);
    }
    History h = HistoryOf(m, g);
    if (!h.data.is_null()) {
      body += h.html;
      if (data.is_null()) data = Json::object();
      data["history"] = std::move(h.data);
    }
    if (!r.ineligible.empty()) {
      body += "<h2>Ineligible</h2>\n<table><thead><tr><th>run</th><th>value</th><th>why</th></tr></thead><tbody>\n";
      for (const auto& e : r.ineligible) {
        std::string reasons;
        for (const auto& x : e.reasons) reasons += (reasons.empty() ? "" : ", ") + x;
        body += "<tr><td>" + RunCell(m, e) + "</td>" + Tag("td", ValueText(e), "class=\"num\"") + Tag("td", reasons) +
                "</tr>\n";
      }
      body += "</tbody></table>\n";
    }
    if (g.records && !g.records->events.empty()) {
      body += "<h2>Record history</h2>\n<table><thead><tr><th>at</th><th>value</th><th>run</th><th>previous</th>"
              "<th>in export</th></tr></thead><tbody>\n";
      for (const auto& ev : g.records->events) {
        catalog::RankEntry unit_of;  // the record's value in the group's unit
        unit_of.unit = r.ranked.empty() ? "" : r.ranked.front().unit;
        unit_of.value = ev.value;
        std::string prev = "-";
        if (ev.previous) {
          catalog::RankEntry pv = unit_of;
          pv.value = ev.previous_value;
          prev = Link(m, kSubpageRoot, RunPage(*ev.previous), Esc(ShortDigest(*ev.previous)), "class=\"digest\"") + " " +
                 Esc(ValueText(pv));
        }
        body += "<tr>" + Tag("td", ev.at.substr(0, 10)) + Tag("td", ValueText(unit_of), "class=\"num\"") + "<td>" +
                Link(m, kSubpageRoot, RunPage(ev.run), Esc(ShortDigest(ev.run)), "class=\"digest\"") + "</td><td>" + prev +
                "</td>" + Tag("td", ev.in_export ? "yes" : "no") + "</tr>\n";
      }
      body += "</tbody></table>\n";
    }
  } else {
    body += "<h2>Runs</h2>\n<p>Serving results compare by objective (serving-v1); ki ranks kernel runs only.</p>\n";
    body += "<table><thead><tr><th>run</th><th>status</th><th>observed</th></tr></thead><tbody>\n";
    for (const auto& e : g.members) {
      body += "<tr><td>" + RunCell(m, e) + "</td>" + Tag("td", e.status) + Tag("td", e.observed_at.substr(0, 10)) +
              "</tr>\n";
    }
    body += "</tbody></table>\n";
  }
  PageParts p;
  p.title = "Group " + s.cohort.hex().substr(0, 12) + " · " + opname;
  p.root = kSubpageRoot;
  p.kind = "group";
  p.body = std::move(body);
  p.chart = !data.is_null();
  p.data = std::move(data);
  return RenderPage(p);
}

}  // namespace ki::report
