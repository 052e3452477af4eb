// The Env a store was opened with (StoreOptions::env, Env::Default() when
// that was null). Modules that read or write files on a store's behalf (a
// pull's scratch download, a streamed add's input, a run's result and
// harness files, a dataset import) go through it, so a fault-injection Env
// handed to the store reaches every file ki touches for that store.
//
// A free function rather than a Store member: store.h is included by
// nearly every file, and this needed no change to it.
#pragma once

#include "ki/env.h"
#include "ki/store.h"

namespace ki {

Env& EnvOf(const Store& store);

}  // namespace ki
