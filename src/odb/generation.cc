// StoreGeneration and BatchGeneration (include/ki/generation.h).
#include "ki/generation.h"

#include "odb/store_impl.h"

namespace ki {

Result<uint64_t> StoreGeneration(Store& store) {
  auto* s = dynamic_cast<odb::LmdbStore*>(&store);
  if (!s) return Status::InvalidInput("not a store of this ki");
  MDB_envinfo info;
  int rc = mdb_env_info(s->lmdb().get(), &info);
  if (rc != 0) return Status::IOError(std::string("index info: ") + mdb_strerror(rc));
  return static_cast<uint64_t>(info.me_last_txnid);
}

Result<uint64_t> BatchGeneration(Batch& batch) {
  auto* b = dynamic_cast<odb::LmdbBatch*>(&batch);
  if (!b) return Status::InvalidInput("not a batch of this ki");
  return static_cast<uint64_t>(mdb_txn_id(b->txn().get()));
}

}  // namespace ki
