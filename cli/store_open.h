// What OpenStore opens, for a command that must act on the store before it
// can be opened (`ki audit --reindex` of a damaged index file).
#pragma once

#include <string>

#include "command.h"

namespace ki::cli {

// The selected store's .ki directory (GlobalOptions::store, KI_STORE, or
// the nearest .ki upward).
Result<std::string> StoreDirectory(const GlobalOptions& g);
// The options OpenStore opens it with.
Result<StoreOptions> CliStoreOptions(OpenMode mode);

}  // namespace ki::cli
