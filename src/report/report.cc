// ki report: gathers the model, renders the pages and writes those whose
// bytes changed, keeping DIR's page list (.ki-report) in step. A run page
// whose inputs (inputs.h) are those the list records is not even rendered.
#include "ki/report.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ki/embedded.h"
#include "ki/evidence.h"
#include "ki/store_env.h"
#include "report/inputs.h"
#include "report/model.h"
#include "report/pages.h"
#include "report/parallel.h"

const ki::EmbeddedFile* ki_embedded_report_assets(size_t* count);

namespace ki::report {

namespace {

constexpr std::string_view kListName = ".ki-report";
constexpr std::string_view kListFormat = "ki-report-pages/1";
constexpr uint64_t kMaxList = 256ull << 20;
constexpr uint64_t kMaxChartJs = 16ull << 20;

// One page of the list (docs/format.md, "Report page list").
struct PageEntry {
  std::string sha256;  // of the page's bytes
  uint64_t size = 0;
  std::string inputs;             // run pages: RunInputs, else ""
  std::vector<Digest> watched;    // run pages: WatchedObjects
};

// One line of the list: `<sha256 hex> <size> <inputs hex or -> <page>
// [<watched hex>...]` (page names have no spaces: ki makes them).
std::string EntryLine(const std::string& page, const PageEntry& e) {
  std::string line = e.sha256.substr(7) + " " + std::to_string(e.size) + " " +
                     (e.inputs.empty() ? std::string("-") : e.inputs.substr(7)) + " " + page;
  for (const auto& d : e.watched) line += " " + d.hex();
  return line + "\n";
}

// A line that is not as format.md says is dropped: its page is then
// written again, never trusted.
std::optional<std::pair<std::string, PageEntry>> EntryFromLine(std::string_view line) {
  std::vector<std::string_view> f;
  for (size_t at = 0; at <= line.size();) {
    size_t sp = line.find(' ', at);
    if (sp == std::string_view::npos) sp = line.size();
    f.push_back(line.substr(at, sp - at));
    at = sp + 1;
  }
  if (f.size() < 4) return std::nullopt;
  PageEntry e;
  auto digest = Digest::Parse("sha256:" + std::string(f[0]));
  if (!digest.ok()) return std::nullopt;
  e.sha256 = digest->str();
  uint64_t size = 0;
  for (char c : f[1]) {
    if (c < '0' || c > '9' || size > (1ull << 40)) return std::nullopt;
    size = size * 10 + uint64_t(c - '0');
  }
  e.size = size;
  if (f[2] != "-") {
    auto inputs = Digest::Parse("sha256:" + std::string(f[2]));
    if (!inputs.ok()) return std::nullopt;
    e.inputs = inputs->str();
  }
  for (size_t i = 4; i < f.size(); ++i) {
    auto w = Digest::Parse("sha256:" + std::string(f[i]));
    if (!w.ok()) return std::nullopt;
    e.watched.push_back(*w);
  }
  return std::pair{std::string(f[3]), std::move(e)};
}

using PageList = std::map<std::string, PageEntry>;

// Writes the pages of one render and remembers them; a page whose digest
// the previous list holds, and whose file is there, is not written. Safe to
// call from several threads: files are written outside the lock.
class SiteWriter {
 public:
  SiteWriter(Env* env, std::string dir, PageList previous)
      : env_(env), dir_(std::move(dir)), previous_(std::move(previous)) {}

  // Which of the previous render's pages are still there: one listing of
  // each folder the list names, not a stat per page.
  Status ListExisting() {
    std::set<std::string> folders = {""};
    for (const auto& [page, e] : previous_)
      if (size_t slash = page.rfind('/'); slash != std::string::npos) folders.insert(page.substr(0, slash));
    for (const std::string& f : folders) {
      const std::string path = f.empty() ? dir_ : dir_ + "/" + f;
      if (!env_->IsDirectory(path)) continue;
      KI_ASSIGN_OR_RETURN(auto names, env_->ListDir(path));
      for (auto& n : names) existing_.insert(f.empty() ? std::move(n) : f + "/" + n);
    }
    return Status::OK();
  }

  // The previous render's entry of `page`, when its file is still there.
  const PageEntry* Previous(const std::string& page) {
    auto it = previous_.find(page);
    if (it == previous_.end() || !existing_.count(page)) return nullptr;
    return &it->second;
  }

  Status Put(const std::string& page, std::string_view bytes, std::string inputs = "",
             std::vector<Digest> watched = {}) {
    Sha256 h;
    h.Update(bytes);
    PageEntry e{h.Finish().str(), bytes.size(), std::move(inputs), std::move(watched)};
    const PageEntry* prev = Previous(page);
    const bool write = !prev || prev->sha256 != e.sha256;
    if (write) {
      const std::string path = dir_ + "/" + page;
      const std::string parent = path.substr(0, path.rfind('/'));
      {
        // Made under the lock: a thread that finds the directory in made_
        // finds it on disk too.
        std::lock_guard<std::mutex> lock(mu_);
        if (!made_.count(parent)) {
          KI_RETURN_IF_ERROR(env_->CreateDirs(parent));
          made_.insert(parent);
        }
      }
      // A site is derived and rewritten at will: no fsync per page.
      KI_RETURN_IF_ERROR(env_->WriteFileAtomic(path, bytes, Durability::kNone));
    }
    std::lock_guard<std::mutex> lock(mu_);
    Count(e, write);
    current_[page] = std::move(e);
    return Status::OK();
  }

  // Keeps the page as the previous render wrote it (its inputs are unchanged).
  void Keep(const std::string& page, const PageEntry& prev) {
    std::lock_guard<std::mutex> lock(mu_);
    Count(prev, /*written=*/false);
    summary_.kept++;
    current_[page] = prev;
  }

  // Removes the pages the previous list named that this render did not
  // give, then writes the new list.
  Status Finish() {
    for (const auto& [page, e] : previous_) {
      if (current_.count(page)) continue;
      const std::string path = dir_ + "/" + page;
      if (env_->Exists(path)) {
        KI_RETURN_IF_ERROR(env_->RemoveFile(path));
        summary_.removed++;
      }
    }
    std::string list = std::string(kListFormat) +
                       "\n# the pages of a site written by ki report and the SHA-256 of each; not a ki object\n";
    for (const auto& [page, e] : current_) list += EntryLine(page, e);
    return env_->WriteFileAtomic(dir_ + "/" + std::string(kListName), list, Durability::kNone);
  }

  ReportSummary& summary() { return summary_; }

 private:
  void Count(const PageEntry& e, bool written) {
    summary_.pages++;
    summary_.bytes += e.size;
    (written ? summary_.written : summary_.unchanged)++;
  }

  Env* env_;
  std::string dir_;
  std::mutex mu_;        // guards current_, made_, summary_ (previous_ is read-only)
  PageList previous_, current_;
  std::unordered_set<std::string> existing_;  // pages of previous_ on disk when the render began
  std::set<std::string> made_;
  ReportSummary summary_;
};

// The previous render's list, or an empty one when `dir` holds no site.
// A directory holding other files is refused: ki overwrites only its own.
Result<PageList> PreviousPages(Env* env, const std::string& dir) {
  PageList out;
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
  std::string_view text = bytes;
  const std::string first = std::string(kListFormat) + "\n";
  if (text.substr(0, first.size()) != first) {
    return Status::InvalidInput("not a page list of ki report (its first line is not " + std::string(kListFormat) +
                                ") (" + list_path + ")");
  }
  for (size_t at = first.size(); at < text.size();) {
    size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(at, nl - at);
    at = nl + 1;
    if (line.empty() || line[0] == '#') continue;
    auto e = EntryFromLine(line);
    if (!e) continue;
    // A name that climbs out of the site is ignored: removing stale pages
    // must never reach outside `dir`.
    const std::string& page = e->first;
    if (page.empty() || page[0] == '/' || page.find("..") != std::string::npos) continue;
    out[page] = std::move(e->second);
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

// One run's page: kept when its inputs are those the list records, else
// rendered and written.
Status RenderOneRun(Store& store, const Model& m, const EvidenceEvaluator& evidence, SiteWriter& site,
                    const Digest& run, const RunPlace& place, const std::string& group_part, const std::string& salt,
                    RunPageCache& cache, WatchedCache& watched_cache) {
  const std::string page = RunPage(run);
  if (const PageEntry* prev = site.Previous(page); prev && !prev->inputs.empty()) {
    KI_ASSIGN_OR_RETURN(std::string inputs,
                        RunInputs(store, m, run, place, group_part, prev->watched, salt, watched_cache));
    if (inputs == prev->inputs) {
      site.Keep(page, *prev);
      return Status::OK();
    }
  }
  std::vector<Digest> watched;
  KI_ASSIGN_OR_RETURN(std::string html, RenderRun(store, m, evidence, run, place, cache, &watched));
  KI_ASSIGN_OR_RETURN(std::string inputs, RunInputs(store, m, run, place, group_part, watched, salt, watched_cache));
  return site.Put(page, html, std::move(inputs), std::move(watched));
}

// A page whose inputs are a digest of what it shows (group, operation,
// series, setting): kept when they are those the list records, else
// rendered and written.
template <typename Render>
Status PutByInputs(SiteWriter& site, const std::string& page, std::string inputs, const Render& render) {
  if (const PageEntry* prev = site.Previous(page); prev && prev->inputs == inputs) {
    site.Keep(page, *prev);
    return Status::OK();
  }
  Result<std::string> html = render();
  if (!html.ok()) return html.status();
  return site.Put(page, *html, std::move(inputs));
}

}  // namespace

Result<ReportSummary> WriteReport(Store& store, const std::string& dir, const ReportOptions& opts) {
  Env* env = opts.env ? opts.env : &EnvOf(store);
  KI_ASSIGN_OR_RETURN(auto previous, PreviousPages(env, dir));
  KI_ASSIGN_OR_RETURN(std::string chartjs, ReadChartJs(env, opts.chartjs_path));
  auto progress = [&](std::string_view phase, uint64_t done, uint64_t total) {
    if (opts.progress) opts.progress(ReportProgress{phase, done, total});
  };
  KI_ASSIGN_OR_RETURN(Model m, Collect(store, opts.refs, opts.threads, [&](uint64_t done, uint64_t total) {
                        if (done % 64 == 0 || done == total) progress("reading", done, total);
                      }));
  KI_ASSIGN_OR_RETURN(EvidenceEvaluator evidence, EvidenceEvaluator::OpenDefault());
  KI_RETURN_IF_ERROR(ApplyAttestedEvidence(store, evidence, &m));
  const std::string salt = opts.renderer + "\n" + TrustFingerprint(evidence.keys());

  KI_RETURN_IF_ERROR(env->CreateDirs(dir));
  SiteWriter site(env, dir, std::move(previous));
  KI_RETURN_IF_ERROR(site.ListExisting());
  KI_RETURN_IF_ERROR(site.Put("assets/chart.min.js", chartjs));
  size_t n = 0;
  const ki::EmbeddedFile* assets = ki_embedded_report_assets(&n);
  for (size_t i = 0; i < n; ++i) KI_RETURN_IF_ERROR(site.Put("assets/" + std::string(assets[i].name), {assets[i].data, assets[i].size}));

  const uint64_t total =
      1 + m.groups.size() + m.operations.size() + m.series.size() + m.settings.size() + m.reruns.size() + m.runs.size();
  std::mutex mu;  // guards done and the progress callback
  uint64_t done = 0;
  auto tick = [&]() {
    std::lock_guard<std::mutex> lock(mu);
    if (++done % 64 == 0 || done == total) progress("rendering", done, total);
  };
  KI_RETURN_IF_ERROR(site.Put("index.html", RenderIndex(m)));
  tick();
  // Every other page is independent of the others: group, operation,
  // series, setting and re-run pages first, then the run pages (most of the
  // site), each checked against the list, rendered and written by whichever
  // thread takes it.
  std::vector<const OperationView*> ops;
  for (const auto& [digest, op] : m.operations) ops.push_back(&op);
  std::vector<const SettingView*> settings;
  for (const auto& [digest, v] : m.settings) settings.push_back(&v);
  std::vector<const RerunView*> reruns;
  for (const auto& [digest, r] : m.reruns) reruns.push_back(&r);
  const size_t ng = m.groups.size(), no = ops.size(), ns = m.series.size(), nv = settings.size();
  // Named lambdas, not ones inside KI_RETURN_IF_ERROR's argument: the
  // macros they use would shadow the outer macro's local.
  auto render = [&](size_t i, int) -> Status {
    if (i < ng) {
      const GroupView& g = m.groups[i];
      KI_RETURN_IF_ERROR(PutByInputs(site, g.page, GroupInputs(m, g, salt), [&] { return RenderGroup(m, g); }));
    } else if ((i -= ng) < no) {
      const OperationView& op = *ops[i];
      KI_RETURN_IF_ERROR(PutByInputs(site, op.page, OperationInputs(m, op, salt), [&] { return RenderOperation(store, m, op); }));
    } else if ((i -= no) < ns) {
      const SeriesView& sv = m.series[i];
      KI_RETURN_IF_ERROR(PutByInputs(site, sv.page, SeriesInputs(m, sv, salt), [&] { return RenderSeries(m, sv); }));
    } else if ((i -= ns) < nv) {
      const SettingView& v = *settings[i];
      KI_ASSIGN_OR_RETURN(std::string inputs, SettingInputs(store, m, v, salt));
      KI_RETURN_IF_ERROR(PutByInputs(site, v.page, std::move(inputs), [&] { return RenderSetting(store, m, v); }));
    } else {
      // Few, read from the store: rendered every time.
      const RerunView& r = *reruns[i - nv];
      KI_ASSIGN_OR_RETURN(std::string page, RenderRerun(store, m, r));
      KI_RETURN_IF_ERROR(site.Put(r.page, page));
    }
    tick();
    return Status::OK();
  };
  KI_RETURN_IF_ERROR(ParallelFor(ng + no + ns + nv + reruns.size(), opts.threads, render));
  std::vector<std::pair<const Digest*, const RunPlace*>> runs;
  runs.reserve(m.runs.size());
  for (const auto& [run, place] : m.runs) runs.emplace_back(&run, &place);
  std::unordered_map<const GroupView*, std::string> group_parts;
  for (const GroupView& g : m.groups) group_parts[&g] = RunGroupPart(m, g);
  std::vector<RunPageCache> caches(size_t(std::max(1, opts.threads)));
  std::vector<WatchedCache> watched_caches(caches.size());
  auto render_run = [&](size_t i, int worker) -> Status {
    const RunPlace& place = *runs[i].second;
    static const std::string kNoGroup;
    const std::string& group_part = place.group ? group_parts.at(place.group) : kNoGroup;
    KI_RETURN_IF_ERROR(RenderOneRun(store, m, evidence, site, *runs[i].first, place, group_part, salt,
                                    caches[size_t(worker)], watched_caches[size_t(worker)]));
    tick();
    return Status::OK();
  };
  KI_RETURN_IF_ERROR(ParallelFor(runs.size(), opts.threads, render_run));
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
