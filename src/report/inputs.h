// What a run page shows that can change while the run itself cannot: a
// digest of all of it, so that a page whose inputs are unchanged is not
// rendered again (the run pages are most of a site, and the slowest part).
// Internal to report.
#pragma once

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
Result<std::string> RunInputs(Store& store, const Model& m, const Digest& run, const RunPlace& place,
                              const std::vector<Digest>& watched, const std::string& salt);

}  // namespace ki::report
