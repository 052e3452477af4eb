// StoreGeneration and BatchGeneration (include/ki/generation.h).
#include "ki/generation.h"

#include "odb/store_impl.h"

namespace ki {

Result<uint64_t> StoreGeneration(Store& store) {
  auto* s = dynamic_cast<odb::LmdbStore*>(&store);
  if (!s) return Status::InvalidInput("not a store of this ki");
  return s->lmdb().LastTxnId();
}

Result<uint64_t> BatchGeneration(Batch& batch) {
  auto* b = dynamic_cast<odb::LmdbBatch*>(&batch);
  if (!b) return Status::InvalidInput("not a batch of this ki");
  return b->txn().id();
}

}  // namespace ki
