// A store's generation: a number that changes with every commit of a write
// to the store, by any process (LMDB's id of its last committed write
// transaction). Two equal readings of one store mean that nothing was
// written in between: a caller may keep what it computed from the store
// (push keeps a bundle's report, remote/state.h) and reuse it while the
// generation stays where it was. Not persistent identity: `ki gc`'s
// compaction may restart the count, so keep a generation beside a fact
// that a later check confirms too (push HEADs the tag).
#pragma once

#include <cstdint>

#include "ki/status.h"
#include "ki/store.h"

namespace ki {

// The generation of the last commit any process made. Always equal to
// itself for a read-only store that nobody writes.
Result<uint64_t> StoreGeneration(Store& store);

// The generation `batch` gives the store when it commits (its write
// transaction's id): recorded inside the batch, it equals a later
// StoreGeneration exactly when no commit came after this one.
Result<uint64_t> BatchGeneration(Batch& batch);

}  // namespace ki
