// Rebuilding a store whose index file cannot be opened (`ki audit
// --reindex`; docs/format.md, "A damaged index file").
//
// index/data.mdb that is empty, not an LMDB file, or shorter than the pages
// its meta page says are in use cannot be opened (reading it through LMDB's
// map would end the process with SIGBUS); one with a damaged page opens but
// does not read whole (a child process reads every page to find out). The objects are the truth and the
// derived tables come from them, but data.mdb also holds the frames of the
// small objects. So the damaged file is not trusted as LMDB at all: it is
// read front to back as plain bytes, and every whole ki frame found in it
// whose content hashes to a digest is that object (content addressing makes
// this safe: a frame cannot be taken for another object). Those frames go
// into a new data.mdb built beside it, the damaged file is kept under a new
// name, and the caller then reindexes as usual (Store::Reindex), which adds
// the loose objects and rebuilds every derived table.
//
// What only the index recorded (tags, records of absent objects, when each
// object was first added, other modules' recorded tables) is not in any
// frame and is not recovered; names come back from the documents.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ki/status.h"
#include "ki/store.h"

namespace ki {

struct IndexRebuild {
  std::string damage;        // what was wrong with the file
  std::string moved_to;      // where the damaged file now is
  uint64_t scanned_bytes = 0;
  uint64_t recovered = 0;    // distinct objects found whole in it
  // Frame headers found that began no whole frame: stale bytes in pages
  // LMDB reused (common), frames cut off by the truncation, or damage.
  uint64_t unreadable = 0;
};

// nullopt when `ki_dir`'s index opens and reads whole (nothing is done).
// Call it before the store is opened in this process (it forks). Otherwise waits
// for the store lock exclusive (as ki gc does: no other process may have
// the file open while it is replaced), builds the new data.mdb in a scratch
// directory under index/ and renames it into place; the damaged file
// becomes index/data.mdb.damaged-<UTC time>. Killed before that rename,
// the store is as it was (the scratch directory goes at the next attempt).
Result<std::optional<IndexRebuild>> RebuildDamagedIndex(const std::string& ki_dir, const StoreOptions& opts);

}  // namespace ki
