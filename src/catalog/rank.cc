// ranking-v1 and record history over the catalog tables.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "catalog/compact_json.h"
#include "catalog/tables.h"
#include "catalog/time.h"
#include "ki/catalog.h"
#include "util/coding.h"

namespace ki::catalog {

std::string_view EvidenceName(Evidence e) {
  switch (e) {
    case Evidence::kReported: return "reported";
    case Evidence::kReproducible: return "reproducible";
    case Evidence::kVerified: return "verified";
    case Evidence::kReplicated: return "replicated";
  }
  return "reported";
}

std::vector<std::string> EligibilityReasons(const RankEntry& e) {
  std::vector<std::string> reasons;
  if (!e.published) reasons.push_back("UNPUBLISHED");
  if (e.status != "passed") {
    std::string s = e.status.empty() ? "UNKNOWN" : e.status;
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::toupper(c)); });
    reasons.push_back("STATUS_" + s);
  }
  if (e.retracted) reasons.push_back("RETRACTED");
  if (e.superseded) reasons.push_back("SUPERSEDED");
  if (!e.value) reasons.push_back("MISSING_PRIMARY_METRIC");
  return reasons;
}

namespace {

bool Tied(const RankEntry& a, const RankEntry& b, bool source_native) {
  if (*a.value == *b.value) return true;
  // Source-native results carry the upstream score without uncertainty
  // semantics: unequal values keep the source's order.
  if (source_native || !a.interval || !b.interval) return false;
  return a.interval->second >= b.interval->first && b.interval->second >= a.interval->first;
}

}  // namespace

Ranking RankV1(std::vector<RankEntry> runs, bool source_native) {
  Ranking out;
  out.source_native = source_native;
  // Orders are computed on indices and each entry is moved once, into
  // place: entries are a few hundred bytes and cohorts hundreds of runs.
  std::vector<size_t> eligible, ineligible;
  for (size_t i = 0; i < runs.size(); ++i) {
    RankEntry& e = runs[i];
    e.reasons = EligibilityReasons(e);
    e.rank = 0;
    e.tied_with_previous = false;
    (e.reasons.empty() ? eligible : ineligible).push_back(i);
  }
  // Ascending by value; equal values keep a deterministic order (by id)
  // before the chain walk, which orders ties for display anyway.
  std::sort(eligible.begin(), eligible.end(), [&](size_t x, size_t y) {
    const RankEntry &a = runs[x], &b = runs[y];
    if (*a.value != *b.value) return *a.value < *b.value;
    return a.id < b.id;
  });
  std::vector<std::vector<size_t>> chains;
  for (size_t i : eligible) {
    bool joins = !chains.empty() && std::all_of(chains.back().begin(), chains.back().end(), [&](size_t m) {
      return Tied(runs[m], runs[i], source_native);
    });
    if (!joins) chains.emplace_back();
    chains.back().push_back(i);
  }
  out.ranked.reserve(eligible.size());
  for (size_t ci = 0; ci < chains.size(); ++ci) {
    auto& chain = chains[ci];
    std::stable_sort(chain.begin(), chain.end(), [&](size_t x, size_t y) {
      const RankEntry &a = runs[x], &b = runs[y];
      if (a.evidence != b.evidence) return a.evidence > b.evidence;
      if (int c = CompareTimes(a.observed_at, b.observed_at); c != 0) return c > 0;
      return a.id < b.id;
    });
    for (size_t i = 0; i < chain.size(); ++i) {
      RankEntry& e = runs[chain[i]];
      e.rank = int(ci) + 1;
      e.tied_with_previous = chain.size() > 1 && i > 0;
      out.ranked.push_back(std::move(e));
    }
  }
  std::sort(ineligible.begin(), ineligible.end(), [&](size_t x, size_t y) { return runs[x].id < runs[y].id; });
  out.ineligible.reserve(ineligible.size());
  for (size_t i : ineligible) out.ineligible.push_back(std::move(runs[i]));
  return out;
}

namespace tables {

Json EntryToJson(const RankEntry& e) {
  Json j = {{"id", e.id}, {"name", e.name}, {"st", e.status}, {"obs", e.observed_at},
            {"ev", int(e.evidence)}, {"pub", e.published}, {"ret", e.retracted}, {"sup", e.superseded}};
  if (!e.implementation.empty()) j["impl"] = e.implementation;
  if (e.value) j["v"] = *e.value;
  if (!e.unit.empty()) j["unit"] = e.unit;
  if (e.interval) j["ci"] = {e.interval->first, e.interval->second};
  return j;
}

RankEntry EntryFromJson(const Digest& run, const Json& j) {
  RankEntry e;
  e.run = run;
  e.id = j.value("id", "");
  e.name = j.value("name", "");
  e.implementation = j.value("impl", "");
  e.status = j.value("st", "");
  e.observed_at = j.value("obs", "");
  int ev = j.value("ev", 1);
  e.evidence = ev >= 1 && ev <= 4 ? Evidence(ev) : Evidence::kReported;
  e.published = j.value("pub", false);
  e.retracted = j.value("ret", false);
  e.superseded = j.value("sup", false);
  if (auto it = j.find("v"); it != j.end() && it->is_number()) e.value = it->get<double>();
  e.unit = j.value("unit", "");
  if (auto it = j.find("ci"); it != j.end() && it->is_array() && it->size() == 2 && (*it)[0].is_number() &&
                              (*it)[1].is_number()) {
    e.interval = std::make_pair((*it)[0].get<double>(), (*it)[1].get<double>());
  }
  return e;
}

namespace {

constexpr char kRunValueTag = 0x01;
enum : uint8_t { kServing = 1, kPub = 2, kRet = 4, kSup = 8, kHasValue = 16, kHasInterval = 32 };

bool RunValueFromBinary(std::string_view stored, RankEntry* e, RunEntryExtra* extra) {
  coding::Decoder r(stored.substr(1));
  std::string_view cohort_raw;
  if (!r.GetBytes(32, &cohort_raw)) return false;
  const Digest cohort = Digest::FromRaw(cohort_raw);
  uint8_t flags, ev;
  if (!r.GetByte(&flags) || !r.GetByte(&ev) || flags >= 64 || ev < 1 || ev > 4) return false;
  e->evidence = Evidence(ev);
  e->published = flags & kPub;
  e->retracted = flags & kRet;
  e->superseded = flags & kSup;
  if (flags & kHasValue) {
    double v;
    if (!r.GetDouble(&v)) return false;
    e->value = v;
  }
  if (flags & kHasInterval) {
    double lo, hi;
    if (!r.GetDouble(&lo) || !r.GetDouble(&hi)) return false;
    e->interval = std::make_pair(lo, hi);
  }
  if (!r.GetLengthPrefixed(&e->id) || !r.GetLengthPrefixed(&e->name) || !r.GetLengthPrefixed(&e->implementation) ||
      !r.GetLengthPrefixed(&e->status) || !r.GetLengthPrefixed(&e->observed_at) || !r.GetLengthPrefixed(&e->unit) ||
      !r.done()) {
    return false;
  }
  if (extra) {
    extra->cohort = cohort.str();
    extra->kind = (flags & kServing) ? "serving" : "kernel";
  }
  return true;
}

}  // namespace

std::string EncodeRunValue(const RankEntry& e, const Digest& cohort, bool kernel) {
  std::string out(1, kRunValueTag);
  out.append(cohort.raw());
  uint8_t flags = (kernel ? 0 : kServing) | (e.published ? kPub : 0) | (e.retracted ? kRet : 0) |
                  (e.superseded ? kSup : 0) | (e.value ? kHasValue : 0) | (e.interval ? kHasInterval : 0);
  out.push_back(char(flags));
  const int ev = int(e.evidence);
  out.push_back(char(ev >= 1 && ev <= 4 ? ev : 1));
  if (e.value) coding::PutDouble(&out, *e.value);
  if (e.interval) {
    coding::PutDouble(&out, e.interval->first);
    coding::PutDouble(&out, e.interval->second);
  }
  for (std::string_view s : {std::string_view(e.id), std::string_view(e.name), std::string_view(e.implementation),
                             std::string_view(e.status), std::string_view(e.observed_at), std::string_view(e.unit)})
    coding::PutLengthPrefixed(&out, s);
  return out;
}

// The stored entry decoded without building a Json tree: `ki rank` and
// `ki show` decode every entry of a cohort (up to hundreds), and the tree's
// allocations were most of their time. Same fields and defaults as
// EntryFromJson; false when the value is not a JSON object.
bool EntryFromStored(const Digest& run, std::string_view stored, RankEntry* out, RunEntryExtra* extra) {
  struct Handler : nlohmann::json_sax<Json> {
    RankEntry& e;
    RunEntryExtra* x;
    std::string field;
    int depth = 0;
    std::vector<double> ci;
    bool ci_ok = false;
    Handler(RankEntry& entry, RunEntryExtra* extra) : e(entry), x(extra) {}

    bool Number(double v) {
      if (depth == 1) {
        if (field == "v") e.value = v;
        else if (field == "ev") e.evidence = v >= 1 && v < 5 ? Evidence(int(v)) : Evidence::kReported;
      } else if (depth == 2 && field == "ci") {
        ci.push_back(v);
      }
      return true;
    }
    bool null() override { return Other(); }
    bool boolean(bool v) override {
      if (depth != 1) return Other();
      if (field == "pub") e.published = v;
      else if (field == "ret") e.retracted = v;
      else if (field == "sup") e.superseded = v;
      return true;
    }
    bool number_integer(Json::number_integer_t v) override { return Number(double(v)); }
    bool number_unsigned(Json::number_unsigned_t v) override { return Number(double(v)); }
    bool number_float(Json::number_float_t v, const Json::string_t&) override { return Number(v); }
    bool string(Json::string_t& v) override {
      if (depth != 1) return Other();
      if (x && field == "cohort") x->cohort = std::move(v);
      else if (x && field == "kind") x->kind = std::move(v);
      else if (field == "id") e.id = std::move(v);
      else if (field == "name") e.name = std::move(v);
      else if (field == "impl") e.implementation = std::move(v);
      else if (field == "st") e.status = std::move(v);
      else if (field == "obs") e.observed_at = std::move(v);
      else if (field == "unit") e.unit = std::move(v);
      return true;
    }
    bool binary(Json::binary_t&) override { return Other(); }
    bool start_object(std::size_t) override { return ++depth == 1 || Other(); }
    bool key(Json::string_t& k) override {
      if (depth != 1) return true;
      field = std::move(k);
      Reset();  // a repeated key: the last one counts, as in a parsed Json
      return true;
    }
    bool end_object() override {
      --depth;
      return true;
    }
    bool start_array(std::size_t) override {
      ++depth;
      if (field == "ci") ci_ok = depth == 2;
      return true;
    }
    bool end_array() override {
      if (depth == 2 && field == "ci" && ci.size() != 2) ci_ok = false;
      --depth;
      return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
    // A value of another type than the field's: the field keeps its
    // default, as EntryFromJson's type checks do.
    bool Other() {
      if (depth >= 2 && field == "ci") ci_ok = false;
      return true;
    }
    void Reset() {
      RankEntry d;
      if (x && field == "cohort") x->cohort.reset();
      else if (x && field == "kind") x->kind.reset();
      else if (field == "id") e.id.clear();
      else if (field == "name") e.name.clear();
      else if (field == "impl") e.implementation.clear();
      else if (field == "st") e.status.clear();
      else if (field == "obs") e.observed_at.clear();
      else if (field == "unit") e.unit.clear();
      else if (field == "v") e.value.reset();
      else if (field == "ev") e.evidence = d.evidence;
      else if (field == "pub") e.published = d.published;
      else if (field == "ret") e.retracted = d.retracted;
      else if (field == "sup") e.superseded = d.superseded;
      else if (field == "ci") {
        ci.clear();
        ci_ok = false;
      }
    }
  };
  *out = RankEntry();
  out->run = run;
  if (extra) *extra = RunEntryExtra();
  if (!stored.empty() && stored.front() == kRunValueTag) return RunValueFromBinary(stored, out, extra);
  if (stored.empty() || stored.front() != '{') return false;
  Handler h(*out, extra);
  if (!Json::sax_parse(stored.begin(), stored.end(), &h, nlohmann::detail::input_format_t::json, true)) return false;
  if (h.ci_ok && h.ci.size() == 2) out->interval = std::make_pair(h.ci[0], h.ci[1]);
  return true;
}

namespace {

// KIR1 (format 14 and before) names each run by its digest, KIR2 by its
// number: 9 bytes a record instead of 37.
constexpr std::string_view kRankMagicDigests = "KIR1", kRankMagicNumbers = "KIR2";
constexpr size_t kRankHeader = 12;

// The part size of a catalog.ranks value's records, 0 when it is malformed.
size_t RankPartSize(std::string_view stored, size_t* ranked, size_t* ineligible) {
  if (stored.size() < kRankHeader) return 0;
  const std::string_view magic = stored.substr(0, 4);
  const size_t part = magic == kRankMagicNumbers ? 4 : magic == kRankMagicDigests ? 32 : 0;
  if (!part) return 0;
  *ranked = coding::DecodeFixed32(stored.data() + 4);
  *ineligible = coding::DecodeFixed32(stored.data() + 8);
  if (stored.size() != kRankHeader + (part + 5) * (*ranked + *ineligible)) return 0;
  return part;
}

}  // namespace

std::string EncodeRanking(const Ranking& r, bool numbered,
                          const std::function<std::string(const Digest&)>& part_of) {
  const size_t part = numbered ? 4 : 32;
  std::string out(numbered ? kRankMagicNumbers : kRankMagicDigests);
  out.reserve(kRankHeader + (part + 5) * (r.ranked.size() + r.ineligible.size()));
  coding::PutFixed32(&out, uint32_t(r.ranked.size()));
  coding::PutFixed32(&out, uint32_t(r.ineligible.size()));
  for (const auto* list : {&r.ranked, &r.ineligible}) {
    for (const auto& e : *list) {
      std::string p = part_of(e.run);
      p.resize(part);  // (a part is always of its layout's size)
      out.append(p);
      coding::PutFixed32(&out, uint32_t(e.rank));
      out.push_back(e.tied_with_previous ? 1 : 0);
    }
  }
  return out;
}

bool FindInRanking(std::string_view stored, std::string_view run, RankRecord* out) {
  *out = RankRecord();
  size_t ranked = 0, ineligible = 0;
  const size_t part = RankPartSize(stored, &ranked, &ineligible);
  if (!part) return false;
  out->ranked = ranked;
  for (size_t i = 0; i < ranked + ineligible; ++i) {
    const char* rec = stored.data() + kRankHeader + (part + 5) * i;
    if (i == 0 && ranked > 0) out->first = std::string(rec, part);
    if (std::string_view(rec, part) != run) continue;
    out->found = true;
    out->rank = int(coding::DecodeFixed32(rec + part));
    out->tied_with_previous = rec[part + 4] == 1;
    return true;  // #1, the first record, is already read
  }
  return true;
}

std::vector<std::string_view> RankingParts(std::string_view stored) {
  std::vector<std::string_view> out;
  size_t ranked = 0, ineligible = 0;
  const size_t part = RankPartSize(stored, &ranked, &ineligible);
  if (!part) return out;
  for (size_t i = 0; i < ranked + ineligible; ++i) out.push_back(stored.substr(kRankHeader + (part + 5) * i, part));
  return out;
}

// ---------------------------------------------------------------- object parts

template <typename Tables>
ObjectParts<Tables>::ObjectParts(Tables& t) : t_(t) {
  const int format = t.format_version();
  numbered_ = format >= kFormatCatalogNumbers;
  if (!numbered_) {
    // An upgrade to format 15 commits its rebuilt tables before FORMAT is
    // rewritten: a store killed between the two holds numbers under the
    // FORMAT it had (13 or 14, or older: one batch does every step).
    // catalog.runs' keys say which (a run's number is 4 bytes, its digest
    // 32).
    (void)t.Scan(kRuns, "", [&](std::string_view k, std::string_view) {
      numbered_ = k.size() == 4;
      return false;
    });
  }
}

template <typename Tables>
Result<std::string> ObjectParts<Tables>::Of(const Digest& d) {
  if (!numbered_) return std::string(d.raw());
  KI_ASSIGN_OR_RETURN(auto n, t_.NumberOf(d));
  if (!n) return std::string(d.raw());
  std::string out;
  coding::PutBigEndian32(&out, *n);
  return out;
}

template <typename Tables>
std::string ObjectParts<Tables>::Of(const ObjectInfo& info) const {
  if (!numbered_ || !info.number) return std::string(info.digest.raw());
  std::string out;
  coding::PutBigEndian32(&out, info.number);
  return out;
}

template <typename Tables>
Result<std::optional<Digest>> ObjectParts<Tables>::DigestOf(std::string_view part) {
  if (part.size() == 32) return std::optional<Digest>(Digest::FromRaw(part));
  if (part.size() != 4) return std::optional<Digest>();
  return t_.DigestOfNumber(coding::DecodeBigEndian32(part.data()));
}

template class ObjectParts<Store>;
template class ObjectParts<Batch>;

}  // namespace tables

namespace {

Result<Json> ParseStored(std::string_view v, std::string_view what, std::string_view key) {
  Json j;
  if (!tables::DecodeStoredJson(v, &j))
    return Status::Corruption("malformed catalog entry in " + std::string(what) + " at key " +
                              tables::KeyText(what, key));
  return j;
}

}  // namespace

// Store or Batch: both scan the same way; a batch sees its own writes.
template <typename Tables>
Result<std::vector<RankEntry>> tables::CohortEntries(Tables& store, const Digest& cohort,
                                                     std::vector<std::string>* parts) {
  tables::ObjectParts<Tables> names(store);
  std::vector<std::string> members;
  KI_RETURN_IF_ERROR(store.Scan(tables::kCohortRuns, cohort.raw(), [&](std::string_view k, std::string_view) {
    if (k.size() == 32 + names.held_size()) members.emplace_back(k.substr(32));
    return true;
  }));
  std::vector<std::pair<RankEntry, std::string>> out;
  out.reserve(members.size());
  for (std::string& part : members) {
    KI_ASSIGN_OR_RETURN(auto run, names.DigestOf(part));
    std::optional<std::string> v;
    if (run) {
      KI_ASSIGN_OR_RETURN(v, store.Get(tables::kRuns, part));
    }
    RankEntry e;
    if (!run || !v || !tables::EntryFromStored(*run, *v, &e)) {
      const std::string what = run ? run->str() : "object number " + std::to_string(coding::DecodeBigEndian32(part.data())) + " (no held object)";
      return Status::Corruption("malformed catalog entry in " + std::string(tables::kRuns) + " of " + what +
                                ", a member of " + cohort.str() + " in " + std::string(tables::kCohortRuns));
    }
    out.emplace_back(std::move(e), std::move(part));
  }
  // In digest order, as when keys held digests: numbers follow the order
  // objects arrived in, which differs between stores.
  if (names.numbered())
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first.run < b.first.run; });
  std::vector<RankEntry> entries;
  entries.reserve(out.size());
  if (parts) parts->clear();
  for (auto& [e, part] : out) {
    entries.push_back(std::move(e));
    if (parts) parts->push_back(std::move(part));
  }
  return entries;
}
template Result<std::vector<RankEntry>> tables::CohortEntries(Store&, const Digest&, std::vector<std::string>*);
template Result<std::vector<RankEntry>> tables::CohortEntries(Batch&, const Digest&, std::vector<std::string>*);

namespace {

Result<Json> CohortDescription(Store& store, const Digest& cohort) {
  KI_ASSIGN_OR_RETURN(auto v, store.Get(tables::kCohorts, cohort.raw()));
  if (!v) return Status::NotFound("no comparison group " + cohort.str() + " in this store");
  return ParseStored(*v, tables::kCohorts, cohort.raw());
}

}  // namespace

Result<bool> HasCatalog(Store& store) {
  bool any = false;
  KI_RETURN_IF_ERROR(store.Scan(tables::kImports, "", [&](std::string_view, std::string_view) {
    any = true;
    return false;
  }));
  return any;
}

Result<std::vector<ImportSummary>> StoredImports(Store& store, std::vector<std::string>* damaged) {
  std::vector<ImportSummary> out;
  Status bad;
  KI_RETURN_IF_ERROR(store.Scan(tables::kImports, "", [&](std::string_view k, std::string_view v) {
    Json j = Json::parse(v, nullptr, /*allow_exceptions=*/false);
    const std::string where = std::string(tables::kImports) + " entry " +
                              (k.size() == 32 ? Digest::FromRaw(k).str() : "of a malformed key");
    auto count = [&](const char* field) -> std::optional<uint64_t> {
      auto it = j.find(field);
      if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
      return it->get<uint64_t>();
    };
    bool ok = k.size() == 32 && j.is_object() && j.contains("source") && j["source"].is_string() &&
              Digest::Parse(j.value("content", "")).ok();
    for (const char* f : {"lines", "keysChecked", "mismatches", "cohorts", "servingCohorts"}) ok = ok && count(f);
    // `malformed` is additive (format.md): absent in older summaries, a
    // count when present.
    if (ok && j.contains("malformed") && !count("malformed")) ok = false;
    if (!ok) {
      const std::string what = where + " is not an import summary (docs/format.md, \"Catalog tables\")";
      if (damaged) {
        damaged->push_back(what);
        return true;
      }
      bad = Status::Corruption(what);
      return false;
    }
    ImportSummary s;
    s.object = Digest::FromRaw(k);
    s.source = j["source"].get<std::string>();
    s.content = *Digest::Parse(j["content"].get<std::string>());
    s.lines = *count("lines");
    s.keys_checked = *count("keysChecked");
    s.mismatches = *count("mismatches");
    s.cohorts = *count("cohorts");
    s.serving_cohorts = *count("servingCohorts");
    s.malformed = count("malformed");
    out.push_back(std::move(s));
    return true;
  }));
  KI_RETURN_IF_ERROR(bad);
  return out;
}

namespace {

// A run's catalog.runs entry: the stored value, its cohort and kind.
struct RunEntry {
  std::string stored;
  Digest cohort;
  bool kernel = true;
};

Result<std::optional<RunEntry>> ReadRunEntry(Store& store, const Digest& run, std::string* part = nullptr) {
  tables::ObjectParts<Store> names(store);
  KI_ASSIGN_OR_RETURN(std::string key, names.Of(run));
  KI_ASSIGN_OR_RETURN(auto v, store.Get(tables::kRuns, key));
  if (part) *part = std::move(key);
  if (!v) return std::optional<RunEntry>();
  RankEntry e;
  tables::RunEntryExtra x;
  if (!tables::EntryFromStored(run, *v, &e, &x)) {
    return Status::Corruption("malformed catalog entry in " + std::string(tables::kRuns) + " of " + run.str());
  }
  auto d = Digest::Parse(x.cohort.value_or(""));
  if (!d.ok()) return Status::Corruption("catalog entry of " + run.str() + " names no cohort");
  return std::optional<RunEntry>(RunEntry{std::move(*v), *d, x.kind.value_or("kernel") == "kernel"});
}

}  // namespace

Result<std::optional<Digest>> CohortOfRun(Store& store, const Digest& run) {
  KI_ASSIGN_OR_RETURN(auto entry, ReadRunEntry(store, run));
  if (!entry) return std::optional<Digest>();
  return std::optional<Digest>(entry->cohort);
}

namespace {

// The facts objects about `d` (catalog.facts), in digest order.
Status FactsDigests(Store& store, const Digest& d, std::vector<Digest>* out) {
  tables::ObjectParts<Store> names(store);
  KI_ASSIGN_OR_RETURN(std::string prefix, names.Of(d));
  std::vector<std::string> parts;
  KI_RETURN_IF_ERROR(store.Scan(tables::kFacts, prefix, [&](std::string_view k, std::string_view) {
    if (k.size() == prefix.size() + names.held_size()) parts.emplace_back(k.substr(prefix.size()));
    return true;
  }));
  const size_t before = out->size();
  for (const std::string& part : parts) {
    KI_ASSIGN_OR_RETURN(auto facts, names.DigestOf(part));
    if (facts) out->push_back(*facts);  // a number no object has: audit reports the entry
  }
  // Digest order, as when the keys held digests.
  std::sort(out->begin() + before, out->end());
  return Status::OK();
}

}  // namespace

Result<std::optional<Json>> RunFacts(Store& store, const Digest& run) {
  std::vector<Digest> all;
  KI_RETURN_IF_ERROR(FactsDigests(store, run, &all));
  if (all.empty()) return std::optional<Json>();
  const Digest last = all.back();
  KI_ASSIGN_OR_RETURN(std::string bytes, store.Read(last));
  KI_ASSIGN_OR_RETURN(RunFactsObject f, ParseFactsObject(bytes, last.str()));
  Json out = std::move(f.row);
  if (!f.events.empty()) out["recordEvents"] = f.events;
  if (!f.source.is_null()) out["source"] = f.source;
  return std::optional<Json>(std::move(out));
}

Status FactsAbout(Store& store, const Digest& d, std::vector<Digest>* out) { return FactsDigests(store, d, out); }

Status ObjectsNamedBy(Store& store, const ObjectInfo& info, std::vector<Digest>* out) {
  if (info.type != ObjectType::kBlob) return Status::OK();
  if (info.media_type == kFactsMediaType) {
    KI_ASSIGN_OR_RETURN(std::string bytes, store.Read(info.digest));
    KI_ASSIGN_OR_RETURN(RunFactsObject f, ParseFactsObject(bytes, info.digest.str()));
    out->push_back(f.subject);
  } else if (info.media_type == kImportMediaType) {
    KI_ASSIGN_OR_RETURN(std::string bytes, store.Read(info.digest));
    Json j = Json::parse(bytes, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("facts") || !j["facts"].is_array()) {
      return Status::Corruption(info.digest.str() + ": not a catalog import object (docs/format.md, \"Catalog objects\")");
    }
    for (const auto& f : j["facts"]) {
      auto d = f.is_string() ? Digest::Parse(f.get<std::string>()) : Result<Digest>(Status::Corruption(""));
      if (!d.ok()) return Status::Corruption(info.digest.str() + ": an entry of `facts` is not a digest");
      out->push_back(*d);
    }
  }
  return Status::OK();
}

Result<std::vector<std::pair<std::string, std::string>>> MissingForGroup(Store& store, const Digest& run) {
  std::vector<std::pair<std::string, std::string>> out;
  tables::ObjectParts<Store> names(store);
  KI_ASSIGN_OR_RETURN(std::string key, names.Of(run));
  KI_ASSIGN_OR_RETURN(auto v, store.Get(tables::kPending, key));
  if (!v) return out;
  KI_ASSIGN_OR_RETURN(Json j, ParseStored(*v, tables::kPending, key));
  if (j.contains("missing") && j["missing"].is_array())
    for (const auto& m : j["missing"]) out.emplace_back(m.value("kind", ""), m.value("digest", ""));
  return out;
}

namespace {

// Why a run that is held is in no group: the parts it waits for.
Status NotInGroup(Store& store, std::string_view ref, const Digest& run) {
  KI_ASSIGN_OR_RETURN(auto missing, MissingForGroup(store, run));
  if (missing.empty()) {
    return Status::NotFound("'" + std::string(ref) + "' is neither a comparison group nor a benchmark run");
  }
  std::string msg = "run " + run.str() + " is in no comparison group yet: this store lacks its ";
  for (size_t i = 0; i < missing.size(); ++i) {
    if (i) msg += " and its ";
    msg += missing[i].first + " " + missing[i].second;
  }
  return Status::NotFound(msg + " (ki pull or ki add it; the run joins its group when it arrives)");
}

}  // namespace

Result<Digest> ResolveCohort(Store& store, std::string_view ref) {
  // A cohort key (full or prefix) first: cohort keys are not objects, so
  // the store's own resolution cannot know them.
  if (auto prefix = DigestPrefix::Parse(ref); prefix && prefix->digits() >= 4) {
    std::vector<Digest> found;
    KI_RETURN_IF_ERROR(store.Scan(tables::kCohorts, prefix->key(), [&](std::string_view k, std::string_view) {
      if (prefix->Matches(k)) found.push_back(Digest::FromRaw(k));
      return found.size() < 20;
    }));
    if (found.size() == 1) return found[0];
    if (found.size() > 1) {
      std::string msg = "'" + std::string(ref) + "' is ambiguous; it matches the comparison groups:";
      for (const auto& d : found) msg += "\n  " + d.str();
      return Status::Ambiguous(msg);
    }
  }
  KI_ASSIGN_OR_RETURN(Digest d, store.Resolve(ref));
  KI_ASSIGN_OR_RETURN(auto cohort, CohortOfRun(store, d));
  if (!cohort) return NotInGroup(store, ref, d);
  return *cohort;
}

Result<Ranking> RankCohort(Store& store, const Digest& cohort) {
  KI_ASSIGN_OR_RETURN(Json desc, CohortDescription(store, cohort));
  if (desc.value("kind", "kernel") != "kernel") {
    return Status::InvalidInput(cohort.str() +
                                " is a serving cohort; ranking-v1 ranks kernel benchmark runs only "
                                "(serving results compare by objective, serving-v1)");
  }
  KI_ASSIGN_OR_RETURN(auto entries, tables::CohortEntries(store, cohort));
  Ranking r = RankV1(std::move(entries), desc.value("sourceNative", false));
  r.cohort = cohort;
  r.metric = desc.value("metric", "");
  r.description = std::move(desc);
  return r;
}

namespace {

RunStanding StandingIn(const Ranking& r, const Digest& run) {
  RunStanding s;
  s.cohort = r.cohort;
  s.of = r.ranked.size();
  for (const auto& e : r.ranked) {
    if (e.run != run) continue;
    s.rank = e.rank;
    s.tied_with_previous = e.tied_with_previous;
  }
  for (const auto& e : r.ineligible)
    if (e.run == run) s.ineligible = e.reasons;
  if (!r.ranked.empty()) s.first = r.ranked.front();
  return s;
}

}  // namespace

Result<std::optional<RunStanding>> StandingOfRun(Store& store, const Digest& run) {
  std::string part;
  KI_ASSIGN_OR_RETURN(auto entry, ReadRunEntry(store, run, &part));
  if (!entry || !entry->kernel) return std::optional<RunStanding>();
  const Digest& cohort = entry->cohort;

  KI_ASSIGN_OR_RETURN(auto stored, store.Get(tables::kRanks, cohort.raw()));
  tables::RankRecord rec;
  if (!stored || !tables::FindInRanking(*stored, part, &rec) || !rec.found) {
    // A store written before catalog.ranks existed (or a damaged value):
    // rank the cohort, as ki rank does.
    KI_ASSIGN_OR_RETURN(Ranking r, RankCohort(store, cohort));
    return std::optional<RunStanding>(StandingIn(r, run));
  }
  RunStanding s;
  s.cohort = cohort;
  s.of = rec.ranked;
  s.rank = rec.rank;
  s.tied_with_previous = rec.tied_with_previous;
  if (rec.rank == 0) {
    RankEntry self;
    if (!tables::EntryFromStored(run, entry->stored, &self)) return Status::Corruption("malformed catalog entry of " + run.str());
    s.ineligible = EligibilityReasons(self);
  }
  if (rec.first) {
    tables::ObjectParts<Store> names(store);
    KI_ASSIGN_OR_RETURN(auto first_run, names.DigestOf(*rec.first));
    std::optional<std::string> first;
    if (first_run) {
      KI_ASSIGN_OR_RETURN(first, store.Get(tables::kRuns, *rec.first));
    }
    RankEntry e;
    if (!first || !tables::EntryFromStored(*first_run, *first, &e)) {
      return Status::Corruption("catalog.ranks of " + cohort.str() + " names " +
                                (first_run ? first_run->str() : tables::KeyText(tables::kRuns, *rec.first)) +
                                ", which its cohort lacks");
    }
    s.first = std::move(e);
  }
  return std::optional<RunStanding>(std::move(s));
}

Result<RecordHistory> Records(Store& store, const Digest& cohort) {
  KI_ASSIGN_OR_RETURN(Json desc, CohortDescription(store, cohort));
  KI_ASSIGN_OR_RETURN(auto entries, tables::CohortEntries(store, cohort));
  RecordHistory h;
  h.cohort = cohort;
  std::set<std::string> ids;
  for (const auto& e : entries) ids.insert(e.id);
  std::vector<RankEntry> eligible;
  for (auto& e : entries)
    if (EligibilityReasons(e).empty()) eligible.push_back(std::move(e));
  std::sort(eligible.begin(), eligible.end(), [](const RankEntry& a, const RankEntry& b) {
    if (int c = CompareTimes(a.observed_at, b.observed_at); c != 0) return c < 0;
    return a.id < b.id;
  });
  const RankEntry* best = nullptr;
  for (const auto& e : eligible) {
    if (best && !(*e.value < *best->value)) continue;
    RecordEvent ev;
    ev.run = e.run;
    ev.run_id = e.id;
    ev.at = e.observed_at;
    ev.value = *e.value;
    if (best) {
      ev.previous = best->run;
      ev.previous_id = best->id;
      ev.previous_value = *best->value;
    }
    h.events.push_back(std::move(ev));
    best = &e;
  }
  // Against the export's own record_events of this cohort.
  // In the order of their runs' digests, as when the keys held digests (a
  // held run's part is its number, in the order runs arrived).
  std::vector<std::pair<std::string, Json>> keyed;  // run part, event
  Status bad;
  KI_RETURN_IF_ERROR(store.Scan(tables::kEvents, cohort.raw(), [&](std::string_view k, std::string_view v) {
    auto j = ParseStored(v, tables::kEvents, k);
    if (!j.ok()) {
      bad = j.status();
      return false;
    }
    keyed.emplace_back(k.substr(std::min<size_t>(32, k.size())), std::move(*j));
    return true;
  }));
  KI_RETURN_IF_ERROR(bad);
  std::vector<Json> exported;
  exported.reserve(keyed.size());
  {
    tables::ObjectParts<Store> names(store);
    std::vector<std::pair<std::string, size_t>> order;  // run digest's bytes, index
    bool numbered = false;
    for (size_t i = 0; i < keyed.size(); ++i) {
      std::string raw = keyed[i].first;
      if (raw.size() == 4) {
        numbered = true;
        KI_ASSIGN_OR_RETURN(auto run, names.DigestOf(raw));
        raw = run ? std::string(run->raw()) : std::string(33, '\xff');  // a number no object has: last
      }
      order.emplace_back(std::move(raw), i);
    }
    if (numbered) std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [raw, i] : order) exported.push_back(std::move(keyed[i].second));
  }
  const std::set<std::string>& known = ids;  // run ids of this cohort in the store
  for (auto& x : exported) {
    std::string prev = x.contains("previousRunId") && x["previousRunId"].is_string() ? x["previousRunId"].get<std::string>() : "";
    if (!known.count(x.value("runId", "")) || (!prev.empty() && !known.count(prev))) {
      h.unchecked.push_back(std::move(x));
      continue;
    }
    bool matched = false;
    for (auto& ev : h.events) {
      if (ev.run_id == x.value("runId", "") && ev.previous_id == prev &&
          CompareTimes(ev.at, x.value("at", "")) == 0) {
        ev.in_export = matched = true;
      }
    }
    if (!matched) h.not_reproduced.push_back(std::move(x));
  }
  return h;
}

}  // namespace ki::catalog
