// A re-run's page: the verdict `ki rerun` stored (reproduced, not
// reproduced, inconclusive; the ratio of medians and its interval against
// the band), and the original's and the re-run's raw samples side by side,
// as one histogram over shared bins and a table of their quantiles.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ki/human.h"
#include "ki/run.h"
#include "json/fields.h"
#include "report/html.h"
#include "report/pages.h"

namespace ki::report {

namespace {

struct Side {
  std::string role;  // "original", "re-run"
  Digest run;
  std::optional<Manifest> manifest;
  std::vector<double> samples;  // sorted, ns; empty: none in the store
  std::string problem;          // why the samples could not be read
};

// numpy's default quantile (linear between order statistics) of sorted values.
double Quantile(const std::vector<double>& v, double q) {
  const double pos = q * double(v.size() - 1);
  const size_t i = size_t(pos);
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (v[i + 1] - v[i]) * (pos - double(i));
}

std::string Ns(double v) { return human::Duration(v); }

std::string Number(const Json& v) {
  if (!v.is_number()) return "-";
  return human::Fixed(v.get<double>(), 3);
}

// The primary latency a run recorded (what ranking reads), in ns.
std::optional<double> PrimaryNs(const Json& spec) {
  const Json t = spec.value("timing", Json());
  if (!t.is_object() || !t.contains("latencyNs") || !t["latencyNs"].is_object()) return std::nullopt;
  const std::string stat = t.value("primaryStatistic", "mean");
  const Json& l = t["latencyNs"];
  if (l.contains(stat) && l[stat].is_number()) return l[stat].get<double>();
  return std::nullopt;
}

// Shared bins over both runs' samples: the pooled 1st to 99th percentile
// when outliers would squeeze the rest into a few bins (the values beyond
// fall in the end bins, and the page says how many), else the full range.
Json Histogram(const std::vector<Side>& sides, std::string* note) {
  std::vector<double> pooled;
  for (const Side& s : sides) pooled.insert(pooled.end(), s.samples.begin(), s.samples.end());
  if (pooled.empty()) return nullptr;
  std::sort(pooled.begin(), pooled.end());
  double lo = pooled.front(), hi = pooled.back();
  const double p1 = Quantile(pooled, 0.01), p99 = Quantile(pooled, 0.99);
  if (p99 > p1 && (p99 - p1) < 0.5 * (hi - lo)) {
    lo = p1;
    hi = p99;
  }
  size_t largest = 0;
  for (const Side& s : sides) largest = std::max(largest, s.samples.size());
  const int bins = std::clamp(int(std::ceil(std::sqrt(double(largest)))), 8, 40);
  const double width = hi > lo ? (hi - lo) / bins : 1;
  Json edges = Json::array();
  for (int b = 0; b <= bins; ++b) edges.push_back(lo + width * b);
  Json sets = Json::array();
  uint64_t below = 0, above = 0;
  for (const Side& s : sides) {
    if (s.samples.empty()) continue;  // said in the table below
    std::vector<uint64_t> count(size_t(bins), 0);
    for (double v : s.samples) {
      if (v < lo) below++;
      if (v > hi) above++;
      int b = hi > lo ? int((v - lo) / width) : 0;
      count[size_t(std::clamp(b, 0, bins - 1))]++;
    }
    Json pct = Json::array();
    for (uint64_t c : count) pct.push_back(100.0 * double(c) / double(s.samples.size()));
    sets.push_back({{"label", s.role + " (" + std::to_string(s.samples.size()) + " samples)"}, {"percent", pct}});
  }
  if (below || above)
    *note = std::to_string(below) + " samples below and " + std::to_string(above) +
            " above the pooled 1st–99th percentile are counted in the end bins.";
  return {{"plot", "rerun"}, {"unit", "ns"}, {"edges", edges}, {"sets", sets}};
}

std::string VerdictSection(const RerunView& r, const std::vector<Side>& sides) {
  std::string out = "<section id=\"verdict\"><h2>Verdict</h2>\n";
  const std::string outcome = OutcomeText(r.verdict);
  if (outcome.empty()) {
    out += "<p class=\"primary\"><span id=\"verdict-outcome\">no verdict</span></p>\n"
           "<p>ki rerun judges a re-run of the same implementation only (this one ran another, or an older ki "
           "made it).</p>\n";
    const double a = sides[0].manifest ? PrimaryNs(sides[0].manifest->spec).value_or(NAN) : NAN;
    const double b = sides[1].manifest ? PrimaryNs(sides[1].manifest->spec).value_or(NAN) : NAN;
    if (a > 0 && std::isfinite(b))
      out += "<table class=\"fields\">\n" + Row("ratio of primary values", Esc(Number(b / a))) + "</table>\n";
    return out + "</section>\n";
  }
  const Json& v = *r.verdict;
  out += "<p class=\"primary\"><span id=\"verdict-outcome\" class=\"outcome " + Esc(v.value("outcome", "")) + "\">" +
         Esc(outcome) + "</span></p>\n<table class=\"fields\">\n";
  out += Row("ratio (re-run / original)", "<span id=\"verdict-ratio\">" + Esc(Number(v.value("ratio", Json()))) + "</span>" +
                                             (StringOr(v, "test") == "bootstrap-median-ratio" ? " of medians" : ""));
  const Json iv = v.value("interval", Json());
  if (iv.is_array() && iv.size() == 2) {
    std::string how;
    if (v.contains("resamples") && v["resamples"].is_number_integer())
      how = " (" + std::to_string(v["resamples"].get<int64_t>()) + " bootstrap resamples)";
    out += Row("95% interval", "<span id=\"verdict-interval\">" + Esc(Number(iv[0]) + " – " + Number(iv[1])) + "</span>" +
                                   Esc(how));
  }
  if (v.contains("tolerance") && v["tolerance"].is_number()) {
    const double t = v["tolerance"].get<double>();
    char band[96];
    std::snprintf(band, sizeof band, "%.3f – %.3f (tolerance %.1f%%)", 1 - t, 1 + t, t * 100);
    out += Row("band", Esc(band));
  }
  out += Row("test", Esc(StringOr(v, "test")));
  const Json u = v.value("uTest", Json());
  if (u.is_object() && u.contains("pValue") && u["pValue"].is_number()) {
    char p[64];
    std::snprintf(p, sizeof p, "p = %.3g", u["pValue"].get<double>());
    out += Row("Mann-Whitney U (beside, never decisive)", Esc(p));
  }
  out += Row("why", Esc(StringOr(v, "words")));
  return out + "</table></section>\n";
}

}  // namespace

Result<std::string> RenderRerun(Store& store, const Model& m, const RerunView& r) {
  std::vector<Side> sides = {{"original", r.original, {}, {}, {}}, {"re-run", r.rerun, {}, {}, {}}};
  for (Side& s : sides) {
    auto man = store.ReadManifest(s.run);
    if (man.ok()) {
      // Samples that are not as ki writes them are said so, not fatal: the
      // rest of the site does not depend on them.
      auto samples = run::SamplesOfRun(store, man->spec);
      if (!samples.ok()) s.problem = samples.status().message();
      else if (*samples) s.samples = std::move(**samples);
      std::sort(s.samples.begin(), s.samples.end());
      s.manifest = std::move(*man);
    } else if (!man.status().IsNotFound()) {
      return man.status();
    }
  }
  std::string body = "<h1>Re-run <span class=\"digest\">" + r.rerun.hex().substr(0, 8) + "</span> of <span class=\"digest\">" +
                     r.original.hex().substr(0, 8) + "</span></h1>\n";
  body += "<p class=\"lead\">" + Link(m, kSubpageRoot, RunPage(r.rerun), "the re-run", "id=\"rerun-run\"") + " · " +
          Link(m, kSubpageRoot, RunPage(r.original), "the original", "id=\"original-run\"");
  if (auto it = m.runs.find(r.rerun); it != m.runs.end() && it->second.group)
    body += " · " + Link(m, kSubpageRoot, it->second.group->page, "the re-run's comparison group");
  body += "</p>\n";
  body += VerdictSection(r, sides);

  std::string note;
  Json data = Histogram(sides, &note);
  body += "<section id=\"distributions\"><h2>Runs and samples</h2>\n";
  if (data.is_null()) {
    body += "<p>Neither run's raw samples are in this store.</p>\n";
  } else {
    body += "<p>Each run's timed samples (every trial pooled), as the share of its samples in each bin of one set "
            "of bins.</p>\n<div class=\"plot\"><canvas id=\"plot\" aria-label=\"the two runs' sample distributions\">"
            "</canvas></div>\n";
    if (!note.empty()) body += "<p>" + Esc(note) + "</p>\n";
  }
  body += "<table id=\"runs\"><thead><tr><th></th><th>run</th><th>title</th><th>implementation</th><th>hardware</th>"
          "<th>status</th><th>observed</th><th>primary</th></tr></thead><tbody>\n";
  std::string quantiles;
  for (const Side& s : sides) {
    body += "<tr data-role=\"" + Esc(s.role) + "\">" + Tag("th", s.role) + "<td>" +
            Link(m, kSubpageRoot, RunPage(s.run), Esc(ShortDigest(s.run)), "class=\"digest\"") + "</td>";
    if (!s.manifest) {
      body += "<td colspan=\"6\">not in this store</td></tr>\n";
      continue;
    }
    const Json doc = DocumentOf(store, *s.manifest);
    std::string title = NameOfManifest(doc);
    if (doc.contains("metadata") && doc["metadata"].is_object() && doc["metadata"].contains("title") &&
        doc["metadata"]["title"].is_string())
      title = doc["metadata"]["title"].get<std::string>();
    auto place = m.runs.find(s.run);
    const RunPlace* at = place == m.runs.end() ? nullptr : &place->second;
    const catalog::RankEntry* e = at ? at->entry : nullptr;
    const Json& spec = s.manifest->spec;
    auto primary = PrimaryNs(spec);
    body += Tag("td", title, "class=\"title\"") +
            Tag("td", e && !e->implementation.empty() ? e->implementation : "-", "class=\"implementation\"") +
            Tag("td", at && at->group && !at->group->summary.hardware.empty() ? at->group->summary.hardware : "-") +
            Tag("td", spec.value("status", "?")) + Tag("td", spec.value("observedAt", "")) +
            Tag("td", primary ? Ns(*primary) : "-", "class=\"num\"") + "</tr>\n";
    quantiles += "<tr data-role=\"" + Esc(s.role) + "\">" + Tag("th", s.role);
    if (s.samples.empty()) {
      quantiles += Tag("td", s.problem.empty() ? "no raw samples in this store" : "raw samples unreadable: " + s.problem,
                       "colspan=\"6\"") + "</tr>\n";
      continue;
    }
    quantiles += Tag("td", std::to_string(s.samples.size()), "class=\"num samples\"");
    for (double q : {0.0, 0.25, 0.5, 0.75, 1.0}) quantiles += Tag("td", Ns(Quantile(s.samples, q)), "class=\"num\"");
    quantiles += "</tr>\n";
  }
  body += "</tbody></table>\n";
  body += "<table id=\"quantiles\"><thead><tr><th></th><th>samples</th><th>min</th><th>25%</th><th>median</th>"
          "<th>75%</th><th>max</th></tr></thead><tbody>\n" + quantiles + "</tbody></table></section>\n";

  PageParts p;
  p.title = "Re-run " + r.rerun.hex().substr(0, 8) + " of " + r.original.hex().substr(0, 8);
  p.root = kSubpageRoot;
  p.kind = "rerun";
  p.body = std::move(body);
  p.chart = !data.is_null();
  p.data = std::move(data);
  return RenderPage(p);
}

}  // namespace ki::report
