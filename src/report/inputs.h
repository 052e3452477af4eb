// What a page shows, as a digest of all of it, so that a page whose inputs
// are unchanged is not rendered again: for a run page what can change while
// the run itself cannot (the run pages are most of a site, and the slowest
// part); for a group, operation or series page the entries it shows and
// the pages it links to. Internal to report.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ki/sign.h"
#include "ki/store.h"
#include "report/model.h"

namespace ki::report {

// The trust list and local keys, as evidence levels and signer names read
// them: a change re-renders every run page.
std::string TrustFingerprint(const KeySources& keys);

// The objects whose presence (held, known absent, missing) and first name a
// run page shows or its evidence level reads: the run's references and its
// implementation's source. Recorded with the page, checked on the next
// render without reading the run.
std::vector<Digest> WatchedObjects(Store& store, const Manifest& run);

// SHA-256 over everything the run's page depends on besides the run's own
// bytes: `salt` (renderer and trust), the run's document, its place in its
// group and the pages linked from it, its facts and attestations, and the
// state of each watched object.
// The state of watched objects, read once per render by each thread: most
// runs watch the same few workloads, protocols and environments.
struct WatchedCache {
  std::map<Digest, std::string> state;
};
// What every run page of group `g` shows of it (its key, operation, the
// pages it links, the number ranked, profile, #1 and its value): computed
// once per group, part of each of its runs' inputs.
std::string RunGroupPart(const Model& m, const GroupView& g);
// `group_part`: RunGroupPart of the run's group, "" when it is in none.
Result<std::string> RunInputs(Store& store, const Model& m, const Digest& run, const RunPlace& place,
                              const std::string& group_part, const std::vector<Digest>& watched,
                              const std::string& salt, WatchedCache& cache);

// The inputs of the pages drawn from the model alone: every field of every
// entry they show and whether each page they link to is in the site.
std::string GroupInputs(const Model& m, const GroupView& g, const std::string& salt);
std::string OperationInputs(const Model& m, const OperationView& op, const std::string& salt);
std::string SeriesInputs(const Model& m, const SeriesView& s, const std::string& salt);
// A protocol's or environment's page: its document and its groups.
Result<std::string> SettingInputs(Store& store, const Model& m, const SettingView& v, const std::string& salt);

}  // namespace ki::report
