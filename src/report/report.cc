// ki report: gathers the model, renders every page and writes those whose
// bytes changed, keeping DIR's page list (.ki-report) in step.
#include "ki/report.h"

#include <map>
#include <set>

#include "ki/embedded.h"
#include "ki/evidence.h"
#include "report/model.h"
#include "report/pages.h"

const ki::EmbeddedFile* ki_embedded_report_assets(size_t* count);

namespace ki::report {

namespace {

constexpr std::string_view kListName = ".ki-report";
constexpr std::string_view kListFormat = "ki-report-pages/1";
constexpr uint64_t kMaxList = 64ull << 20;
constexpr uint64_t kMaxChartJs = 16ull << 20;

// Writes the pages of one render and remembers their digests; a page whose
// digest the previous list holds, and whose file is there, is not written.
class SiteWriter {
 public:
  SiteWriter(Env* env, std::string dir, std::map<std::string, std::string> previous)
      : env_(env), dir_(std::move(dir)), previous_(std::move(previous)) {}

  Status Put(const std::string& page, std::string_view bytes) {
    Sha256 h;
    h.Update(bytes);
    const std::string digest = h.Finish().str();
    summary_.pages++;
    summary_.bytes += bytes.size();
    const std::string path = dir_ + "/" + page;
    auto it = previous_.find(page);
    if (it != previous_.end() && it->second == digest && env_->Exists(path)) {
      summary_.unchanged++;
    } else {
      const std::string parent = path.substr(0, path.rfind('/'));
      if (!made_.count(parent)) {
        KI_RETURN_IF_ERROR(env_->CreateDirs(parent));
        made_.insert(parent);
      }
      // A site is derived and rewritten at will: no fsync per page.
      KI_RETURN_IF_ERROR(env_->WriteFileAtomic(path, bytes, Durability::kNone));
      summary_.written++;
    }
    current_[page] = digest;
    return Status::OK();
  }

  // Removes the pages the previous list named that this render did not
  // give, then writes the new list.
  Status Finish() {
    for (const auto& [page, digest] : previous_) {
      if (current_.count(page)) continue;
      const std::string path = dir_ + "/" + page;
      if (env_->Exists(path)) {
        KI_RETURN_IF_ERROR(env_->RemoveFile(path));
        summary_.removed++;
      }
    }
    Json pages = Json::object();
    for (const auto& [page, digest] : current_) pages[page] = digest;
    Json list = {{"format", kListFormat},
                 {"note", "the pages of a site written by ki report and the SHA-256 of each; not a ki object"},
                 {"pages", pages}};
    return env_->WriteFileAtomic(dir_ + "/" + std::string(kListName), list.dump(1) + "\n", Durability::kNone);
  }

  ReportSummary& summary() { return summary_; }

 private:
  Env* env_;
  std::string dir_;
  std::map<std::string, std::string> previous_, current_;
  std::set<std::string> made_;
  ReportSummary summary_;
};

// The previous render's list, or an empty one when `dir` holds no site.
// A directory holding other files is refused: ki overwrites only its own.
Result<std::map<std::string, std::string>> PreviousPages(Env* env, const std::string& dir) {
  std::map<std::string, std::string> out;
  if (!env->Exists(dir)) return out;
  if (!env->IsDirectory(dir)) return Status::InvalidInput("not a directory (" + dir + ")");
  const std::string list_path = dir + "/" + std::string(kListName);
  if (!env->Exists(list_path)) {
    KI_ASSIGN_OR_RETURN(auto names, env->ListDir(dir));
    if (!names.empty()) {
      return Status::InvalidInput("the directory is not empty and holds no report of ki (no " + std::string(kListName) +
                                  " in it); ki report writes into a new or empty directory, or one it wrote (" + dir + ")");
    }
    return out;
  }
  KI_ASSIGN_OR_RETURN(std::string bytes, env->ReadFile(list_path, kMaxList));
  Json j = Json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("format", "") != kListFormat || !j.contains("pages") || !j["pages"].is_object()) {
    return Status::InvalidInput("not a page list of ki report (format " + std::string(kListFormat) + " expected) (" +
                                list_path + ")");
  }
  for (auto it = j["pages"].begin(); it != j["pages"].end(); ++it) {
    // A name that climbs out of the site, or is no page name, is ignored:
    // removing stale pages must never reach outside `dir`.
    const std::string& page = it.key();
    if (!it->is_string() || page.empty() || page[0] == '/' || page.find("..") != std::string::npos) continue;
    out[page] = it->get<std::string>();
  }
  return out;
}

Result<std::string> ReadChartJs(Env* env, const std::string& path) {
  auto bytes = env->ReadFile(path, kMaxChartJs);
  if (bytes.ok()) return bytes;
  if (bytes.status().IsNotFound()) {
    return Status::IOError("Chart.js is missing: install Debian's libjs-chart.js (scripts/install-deps.sh), or set "
                           "KI_CHARTJS to Chart.js 3's chart.min.js (" + path + ")");
  }
  return bytes.status();
}

}  // namespace

Result<ReportSummary> WriteReport(Store& store, const std::string& dir, const ReportOptions& opts) {
  Env* env = opts.env ? opts.env : Env::Default();
  KI_ASSIGN_OR_RETURN(auto previous, PreviousPages(env, dir));
  KI_ASSIGN_OR_RETURN(std::string chartjs, ReadChartJs(env, opts.chartjs_path));
  auto progress = [&](std::string_view phase, uint64_t done, uint64_t total) {
    if (opts.progress) opts.progress(ReportProgress{phase, done, total});
  };
  KI_ASSIGN_OR_RETURN(Model m, Collect(store, opts.refs, [&](uint64_t done, uint64_t total) {
                        if (done % 64 == 0 || done == total) progress("reading", done, total);
                      }));
  KI_ASSIGN_OR_RETURN(EvidenceEvaluator evidence, EvidenceEvaluator::OpenDefault());

  KI_RETURN_IF_ERROR(env->CreateDirs(dir));
  SiteWriter site(env, dir, std::move(previous));
  KI_RETURN_IF_ERROR(site.Put("assets/chart.min.js", chartjs));
  size_t n = 0;
  const ki::EmbeddedFile* assets = ki_embedded_report_assets(&n);
  for (size_t i = 0; i < n; ++i) KI_RETURN_IF_ERROR(site.Put("assets/" + std::string(assets[i].name), {assets[i].data, assets[i].size}));

  const uint64_t total = 1 + m.groups.size() + m.operations.size() + m.settings.size() + m.runs.size();
  uint64_t done = 0;
  auto tick = [&]() {
    if (++done % 64 == 0 || done == total) progress("rendering", done, total);
  };
  KI_RETURN_IF_ERROR(site.Put("index.html", RenderIndex(m)));
  tick();
  for (const auto& g : m.groups) {
    KI_RETURN_IF_ERROR(site.Put(g.page, RenderGroup(m, g)));
    tick();
  }
  for (const auto& [digest, op] : m.operations) {
    KI_RETURN_IF_ERROR(site.Put(op.page, RenderOperation(m, op)));
    tick();
  }
  for (const auto& [digest, v] : m.settings) {
    KI_ASSIGN_OR_RETURN(std::string page, RenderSetting(store, m, v));
    KI_RETURN_IF_ERROR(site.Put(v.page, page));
    tick();
  }
  RunPageCache cache;
  for (const auto& [run, place] : m.runs) {
    KI_ASSIGN_OR_RETURN(std::string page, RenderRun(store, m, evidence, run, place, cache));
    KI_RETURN_IF_ERROR(site.Put(RunPage(run), page));
    tick();
  }
  KI_RETURN_IF_ERROR(site.Finish());
  ReportSummary s = site.summary();
  s.dir = dir;
  s.index = dir + "/index.html";
  s.groups = m.groups.size();
  s.runs = m.runs.size();
  s.operations = m.operations.size();
  return s;
}

}  // namespace ki::report
