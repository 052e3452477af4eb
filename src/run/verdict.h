// The verdict of a rerun (`ki rerun`): internal to src/run.
#pragma once

#include "ki/json.h"
#include "ki/run.h"
#include "ki/stats.h"
#include "ki/store.h"

namespace ki::run::internal {

// Judges `fresh` against the original from their raw samples (the
// original's, when this store holds them and they read as ki's; else its
// recorded value). Errors only for what the statistics cannot recover from.
Result<stats::ReproductionVerdict> JudgeRerun(Store& store, const Json& original_spec, const RunOutcome& fresh,
                                              double tolerance);

// {outcome, test, tolerance, ratio, words, interval?, confidence?,
// resamples?, seed?, uTest?}: what run.verdicts stores and the `reproduced`
// or `disputed` predicate carries as rerun.verdict (docs/format.md).
Json VerdictJson(const stats::ReproductionVerdict& v);

}  // namespace ki::run::internal
