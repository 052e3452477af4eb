// ki rerun: run a stored run's implementation (or another one) again on its
// workload, judge whether the number held, link the two, place the new run
// in the original's group and sign the verdict. One RerunJob a rerun; its
// phases run in order.
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "ki/catalog.h"
#include "ki/run.h"
#include "ki/sign.h"
#include "json/fields.h"
#include "run/records.h"
#include "run/task.h"
#include "run/verdict.h"

namespace ki::run {

Result<std::vector<Digest>> RerunsOf(Store& store, const Digest& run) {
  std::vector<Digest> out;
  KI_RETURN_IF_ERROR(store.Scan(internal::kRerunsTable, run.raw(), [&](std::string_view k, std::string_view) {
    if (k.size() == 64) out.push_back(Digest::FromRaw(k.substr(32)));
    return true;
  }));
  return out;
}

Result<std::optional<Digest>> OriginalOf(Store& store, const Digest& rerun) {
  KI_ASSIGN_OR_RETURN(auto v, store.Get(internal::kOriginalTable, rerun.raw()));
  if (!v) return std::optional<Digest>();
  KI_ASSIGN_OR_RETURN(Digest d, Digest::Parse(*v));
  return std::optional<Digest>(d);
}

namespace {

using namespace internal;

class RerunJob {
 public:
  RerunJob(Store& store, const RerunRequest& req) : store_(store), req_(req) {}

  Result<RerunOutcome> Go() {
    KI_RETURN_IF_ERROR(ReadOriginal());
    KI_RETURN_IF_ERROR(CheckNeeds());
    KI_RETURN_IF_ERROR(LoadKey());
    KI_RETURN_IF_ERROR(Execute());
    KI_RETURN_IF_ERROR(Link());
    Compare();
    KI_RETURN_IF_ERROR(Place());
    Sign();
    return std::move(out_);
  }

 private:
  // The original run, its run facts (seed, device, kernel) and protocol:
  // what the new run repeats.
  Status ReadOriginal();
  // What the rerun needs, each checked so that the message lists them all.
  Status CheckNeeds();
  // The signing key before the run: a wrong key name or passphrase (or no
  // way to ask for one) then fails in seconds, before a GPU run is spent
  // and stored, instead of after it with the comparison lost.
  Status LoadKey();
  // The run, and (same implementation only) the verdict.
  Status Execute();
  // The link and the verdict, in ki's tables: the schema has no field for
  // them, and the run record must not change its digest for being re-run.
  Status Link();
  // The ratio to the original's value and how the environments differ.
  void Compare();
  // --implementation: where the new run would rank in the original's group.
  Status Place();
  // With a key, the verdict signed.
  void Sign();

  Store& store_;
  const RerunRequest& req_;
  RerunOutcome out_;
  Json spec_;  // the original's
  RunRequest rr_;
  Manifest wm_;
  bool have_workload_ = false;
  std::optional<SigningKey> key_;
  std::optional<stats::ReproductionVerdict> verdict_;
};

Status RerunJob::ReadOriginal() {
  Manifest rm;
  KI_ASSIGN_OR_RETURN(out_.original, ResolveKind(store_, req_.run, Kind::kBenchmarkRun, &rm));
  out_.original_spec = rm.spec;
  spec_ = rm.spec;
  const Json& s = spec_;
  // The original's run facts from its raw samples. They are a blob like any
  // other (pulled, or added by hand), so their fields are type-checked:
  // value() threw type_error on a `seed` that was a string (exit 5,
  // nlohmann's message), and a `timeoutS` of 0 or less re-ran the kernel
  // with no time limit at all.
  Json facts;
  std::string facts_where;
  if (auto d = Digest::Parse(s.value("/evidence/rawSamples/digest"_json_pointer, std::string())); d.ok()) {
    auto b = store_.Read(*d);
    if (b.ok()) {
      Json j = Json::parse(*b, nullptr, false);
      if (StringOr(j, "format") == kSamplesFormat) facts = j, facts_where = "the raw samples " + d->str();
    }
  }
  // Its protocol: ki's settings are repeated; another harness's protocol
  // cannot be, and ki's cold-L2 protocol (flashinfer-bench's method) stands in.
  if (facts.contains("seed")) {
    KI_ASSIGN_OR_RETURN(rr_.seed, GetUnsigned(facts, "seed", facts_where));
  }
  if (!req_.device.empty()) {
    rr_.device = req_.device;
  } else {
    KI_ASSIGN_OR_RETURN(rr_.device, GetString(facts, "device", facts_where));
  }
  rr_.timeout_s = 120.0;
  // The original's reference timing is repeated with it.
  if (facts.contains("speedup") && facts["speedup"].is_boolean()) rr_.speedup = facts["speedup"].get<bool>();
  if (req_.timeout_s) {
    rr_.timeout_s = *req_.timeout_s;
  } else if (facts.contains("timeoutS")) {
    const Json& t = facts["timeoutS"];
    if (!t.is_number() || !(t.get<double>() > 0) || !std::isfinite(t.get<double>()))
      return Status::InvalidInput(facts_where + ": `timeoutS` is " +
                                  (t.is_number() ? t.dump() : std::string(JsonTypeName(t))) +
                                  ", not a positive number of seconds (give --timeout)");
    rr_.timeout_s = t.get<double>();
  }
  if (auto pd = Digest::Parse(s.value("protocolDigest", "")); pd.ok()) {
    auto pm = store_.ReadManifest(*pd);
    if (pm.ok() && SettingsFromProtocol(pm->spec).ok()) rr_.protocol = pd->str();
  }
  if (auto ed = Digest::Parse(s.value("environmentDigest", "")); ed.ok()) {
    auto em = store_.ReadManifest(*ed);
    if (em.ok()) out_.original_environment = em->spec;
  }
  return Status::OK();
}

Status RerunJob::CheckNeeds() {
  const Json& s = spec_;
  std::vector<std::string> missing;
  const std::string wl = s.value("workloadDigest", "");
  auto wd = Digest::Parse(wl);
  if (wd.ok()) {
    auto m = store_.ReadManifest(*wd);
    if (m.ok()) {
      wm_ = *m;
      have_workload_ = true;
    } else if (m.status().IsNotFound()) {
      missing.push_back("the workload " + wl);
    } else {
      return m.status();
    }
  }
  if (have_workload_) {
    std::vector<std::string> tm;
    (void)LoadTask(store_, *wd, wm_, &tm);
    missing.insert(missing.end(), tm.begin(), tm.end());
  }
  const std::string impl = req_.implementation.empty() ? s.value("implementationDigest", "") : req_.implementation;
  if (req_.implementation.empty()) {
    auto id = Digest::Parse(impl);
    auto im = id.ok() ? store_.ReadManifest(*id) : Result<Manifest>(Status::NotFound(""));
    if (!im.ok()) {
      missing.push_back("the implementation " + impl + " (its ImplementationRevision)");
    } else {
      auto src = im->spec.value("/source/contentDigest"_json_pointer, std::string());
      auto sd = Digest::Parse(src);
      if (!sd.ok()) {
        missing.push_back("the source code of implementation " + impl + " (its ImplementationRevision names none)");
      } else if (auto st = store_.Stat(*sd); !st.ok() || !*st) {
        missing.push_back("the source code " + src + " of implementation " + impl);
      }
      std::string lang = im->spec.value("/callable/language"_json_pointer, std::string());
      if (!LanguageNamed(lang))
        missing.push_back("a build recipe for implementation " + impl + " (language '" + lang +
                          "'; ki runs cuda, cpp, python and triton sources)");
    }
  }
  if (!missing.empty()) {
    std::string msg = "cannot re-run " + out_.original.str() + ": the store lacks";
    for (const auto& m : missing) msg += "\n  - " + m;
    if (req_.implementation.empty())
      msg += "\n`ki rerun REF --implementation IMPL` runs another implementation on the same workload and "
             "shows where it would rank among the original's comparison group";
    return Status::NotFound(msg);
  }
  out_.same_implementation = req_.implementation.empty();
  rr_.implementation = impl;
  rr_.workload = wl;
  if (!out_.same_implementation) rr_.device = req_.device;  // another implementation: its own device kind
  return Status::OK();
}

Status RerunJob::LoadKey() {
  if (req_.sign_key.empty()) return Status::OK();
  KI_ASSIGN_OR_RETURN(Keyring ring, Keyring::Default());
  KI_ASSIGN_OR_RETURN(SigningKey k, ring.Load(req_.sign_key, DefaultPassphrase));
  key_.emplace(std::move(k));
  return Status::OK();
}

Status RerunJob::Execute() {
  KI_ASSIGN_OR_RETURN(out_.fresh, Run(store_, rr_));
  // Another implementation's run is a new measurement, not a reproduction.
  if (out_.same_implementation) {
    KI_ASSIGN_OR_RETURN(verdict_, JudgeRerun(store_, spec_, out_.fresh, req_.match_tolerance));
    out_.verdict = VerdictJson(*verdict_);
  }
  return Status::OK();
}

Status RerunJob::Link() {
  KI_ASSIGN_OR_RETURN(auto batch, store_.NewBatch());
  std::string k(out_.original.raw());
  k.append(out_.fresh.run.raw());
  KI_RETURN_IF_ERROR(batch->Put(kRerunsTable, k, out_.same_implementation ? "rerun" : "other-implementation"));
  KI_RETURN_IF_ERROR(batch->Put(kOriginalTable, out_.fresh.run.raw(), out_.original.str()));
  if (out_.verdict) {
    Json stored = *out_.verdict;
    stored["original"] = out_.original.str();
    KI_RETURN_IF_ERROR(batch->Put(kVerdictsTable, out_.fresh.run.raw(), stored.dump()));
  }
  return batch->Commit();
}

void RerunJob::Compare() {
  const Json& s = spec_;
  std::optional<double> orig;
  if (s.contains("timing")) {
    std::string stat = s["timing"].value("primaryStatistic", "mean");
    const Json& l = s["timing"]["latencyNs"];
    if (l.contains(stat) && l[stat].is_number()) orig = l[stat].get<double>();
  }
  if (orig && out_.fresh.latency_ns && *orig > 0) out_.ratio = *out_.fresh.latency_ns / *orig;
  out_.matched = verdict_ && verdict_->outcome == stats::Reproduction::kReproduced;
  if (out_.original_environment.is_object()) {
    for (const auto& d : catalog::FieldDiffs(out_.original_environment, out_.fresh.environment_spec)) {
      out_.environment_differences.push_back(d.path + ": " + (d.a ? d.a->dump() : "(none)") + " -> " +
                                             (d.b ? d.b->dump() : "(none)"));
    }
  }
}

// The group's runs as the store knows them, the original itself (a run
// added with `ki add` is in no imported group), and this run.
Status RerunJob::Place() {
  if (out_.same_implementation || !out_.fresh.latency_ns || !have_workload_) return Status::OK();
  const Json& s = spec_;
  KI_ASSIGN_OR_RETURN(auto cohort, catalog::CohortOfRun(store_, out_.original));
  if (!cohort) {
    auto k = CohortKeyOf(s, wm_.spec);
    if (k.ok()) cohort = *k;
  }
  if (!cohort) return Status::OK();
  RankPlace p;
  std::vector<catalog::RankEntry> all;
  bool source_native = s.contains("sourceNative");
  if (auto r = catalog::RankCohort(store_, *cohort); r.ok()) {
    all = r->ranked;
    all.insert(all.end(), r->ineligible.begin(), r->ineligible.end());
    source_native = r->source_native;
    p.metric = r->metric;
  }
  if (p.metric.empty()) p.metric = catalog::MetricKey(s);
  if (std::none_of(all.begin(), all.end(), [&](const auto& e) { return e.run == out_.original; })) {
    std::string impl_name;
    if (auto id = Digest::Parse(s.value("implementationDigest", "")); id.ok()) impl_name = NameOf(store_, *id);
    all.push_back(EntryOf(out_.original, s, NameOf(store_, out_.original), impl_name, catalog::Evidence::kReported));
  }
  catalog::RankEntry e = EntryOf(out_.fresh.run, out_.fresh.spec, "(this run)", NameOf(store_, out_.fresh.implementation),
                                 catalog::Evidence::kReproducible);
  e.interval.reset();  // compared by value with runs measured elsewhere
  all.push_back(e);
  catalog::Ranking nr = catalog::RankV1(std::move(all), source_native);
  for (const auto& x : nr.ranked) {
    if (x.run == out_.fresh.run) p.rank = x.rank;
    p.of = std::max(p.of, x.rank);
    if (x.rank == 1 && x.run != out_.fresh.run && p.best_name.empty()) {
      p.best_name = x.implementation.empty() ? x.name : x.implementation;
      p.best_value = x.value.value_or(0);
    }
  }
  p.of = int(nr.ranked.size());
  if (p.best_name.empty()) {  // this run is #1 alone
    p.best_name = "this run";
    p.best_value = *out_.fresh.latency_ns;
  }
  out_.place = p;
  return Status::OK();
}

// `reproduced` when the number held, `disputed` (carrying the re-run and the
// verdict) when it did not; inconclusive is not signed. The run is stored by
// now: a failure here is reported beside the comparison (sign_status), not
// instead of it.
void RerunJob::Sign() {
  if (!key_) return;
  const bool machine_fault =
      out_.fresh.status == "compile_error" || out_.fresh.status == "runtime_error" || out_.fresh.status == "timeout";
  if (!verdict_ || verdict_->outcome == stats::Reproduction::kInconclusive) {
    out_.attestation_note = verdict_ ? "not signed: the verdict is inconclusive (" + verdict_->words + ")"
                                     : "not signed: another implementation's run is no re-run of the original";
    return;
  }
  if (machine_fault && !req_.dispute_on_failure) {
    out_.attestation_note = "not signed: the re-run ended " + out_.fresh.status +
                            " on this machine, a fault of the machine rather than evidence about the run";
    return;
  }
  const bool held = verdict_->outcome == stats::Reproduction::kReproduced;
  AttestationRequest ar;
  ar.subject = out_.original;
  ar.predicate = held ? PredicateKind::kReproduced : PredicateKind::kDisputed;
  ar.note = "ki rerun on " + out_.fresh.device + ": " + verdict_->words;
  if (out_.fresh.latency_ns && out_.ratio && *out_.ratio > 0) {
    RerunResult res;
    res.run = out_.fresh.run;
    res.latency_ns = *out_.fresh.latency_ns;
    res.ratio = *out_.ratio;
    res.passed = out_.fresh.status == "passed";
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    res.machine = req_.machine.empty() ? std::string(host) + " " + out_.fresh.device_name : req_.machine;
    res.environment = out_.fresh.environment;
    res.verdict = out_.verdict;
    ar.rerun = res;
  } else {
    ar.evidence.push_back(out_.fresh.run);  // a re-run that did not pass: its record is the evidence
  }
  auto pr = CreateAttestation(store_, *key_, ar);
  if (pr.ok()) {
    out_.attestation = pr->digest;
    out_.attestation_kind = std::string(PredicateName(ar.predicate));
  } else {
    out_.sign_status = pr.status();
    out_.attestation_note = "not signed: " + pr.status().message();
  }
}

}  // namespace

Result<RerunOutcome> Rerun(Store& store, const RerunRequest& req) { return RerunJob(store, req).Go(); }

}  // namespace ki::run
