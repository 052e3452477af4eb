// The pages of the report, each rendered from the Model (and, for run
// pages, the run's own objects) into one HTML document. Internal to report.
#pragma once

#include <map>
#include <string>

#include "ki/evidence.h"
#include "ki/stats.h"
#include "ki/store.h"
#include "report/model.h"

namespace ki::report {

// How a page one folder below the index (a run, group, operation, series,
// setting or re-run page) reaches the index, the assets and the other pages.
inline const std::string kSubpageRoot = "../";

std::string RenderIndex(const Model& m);
std::string RenderGroup(const Model& m, const GroupView& g);
Result<std::string> RenderOperation(Store& store, const Model& m, const OperationView& op);
// What run pages share and need only once: the sections of protocols and
// environments, which hundreds of runs name. One per rendering thread.
struct RunPageCache {
  std::map<Digest, std::string> settings;  // the section's HTML, "" when not held
};
// `watched` gets the objects the page's inputs watch (inputs.h).
Result<std::string> RenderRun(Store& store, const Model& m, const EvidenceEvaluator& evidence, const Digest& run,
                              const RunPlace& place, RunPageCache& cache, std::vector<Digest>* watched);
Result<std::string> RenderSetting(Store& store, const Model& m, const SettingView& v);
std::string RenderSeries(const Model& m, const SeriesView& s);
Result<std::string> RenderRerun(Store& store, const Model& m, const RerunView& r);

// A series as report.js draws it (its timed runs, each segment's level and
// the change points), and the change points found.
struct SeriesChart {
  Json data;  // {label, points, levels, changes[, intervals]}
  std::optional<stats::Segmentation> seg;
  std::string unit;
};
SeriesChart ChartOfSeries(const Model& m, const SeriesView& s, bool intervals);
// "+12.3% (slower; median 18.1 µs → 20.3 µs, ratio 1.123, 95% interval 1.10–1.15)"
std::string ChangeText(const stats::ChangePoint& c, const std::string& unit);

// Shared by the pages.
std::string ShortDigest(const Digest& d);          // "sha256:215ac4f9a267…"
std::string ShortDigest(const std::string& d);     // the same for a digest's text
std::string ValueText(const catalog::RankEntry& e);     // "18.10 µs", "-"
std::string IntervalText(const catalog::RankEntry& e);  // "17.9 µs – 18.3 µs", ""
std::string RunLabel(const catalog::RankEntry& e);      // implementation, else name, else id
// A section of a manifest's fields ("hardware.product  NVIDIA B200"),
// "" when there are none.
std::string FieldsSection(const std::string& id, const std::string& heading, const Json& v,
                          const std::string& heading_html = "");
// The stored document of a manifest (metadata kept), or its canonical fields.
Json DocumentOf(Store& store, const Manifest& m);
// metadata.name of a document, "" when none.
std::string NameOfManifest(const Json& doc);
// Row of a key/value table: <tr><th>k</th><td>v_html</td></tr>.
std::string Row(const std::string& key, const std::string& value_html);

}  // namespace ki::report
