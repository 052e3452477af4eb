// What ki push and ki pull share: the remote and refs arguments, the
// transfer flags, and opening the store and the remote before a transfer.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "ki/remote.h"

namespace ki::cli {

struct TransferArgs {
  std::string remote;             // a configured name or a URL
  std::vector<std::string> refs;
  bool insecure = false;
  bool json = false;
  bool verbose = false;     // -v: a line per ref, not the summary
  int jobs = 0;             // set by AddTransferArgs
  uint64_t buffer_mib = 0;  // set by AddTransferArgs
  TransferTimeouts timeouts;  // --connect-timeout ... --min-rate
  CLI::Option* refs_option = nullptr;  // set by AddTransferArgs
};

// Adds `remote`, `refs`, --insecure, -j/--jobs (default `jobs`),
// --buffer-mib (default `buffer_bytes` in MiB; the memory bound of the
// direction: push_buffer_bytes or pull_buffer_bytes), the time limits
// (--connect-timeout, --low-speed-limit, --low-speed-time, --timeout,
// --min-rate: TransferTimeouts) and --json to `sub`;
// each help text states its default after the help given.
void AddTransferArgs(CLI::App* sub, TransferArgs* args, const char* refs_help, int jobs, const char* jobs_help,
                     uint64_t buffer_bytes, const char* buffer_help);

// How a transfer needs the store. Pull stores what it fetches: kWrite.
// Push only reads objects, and writes remote.state, a cache whose failed
// write Push reports as a warning (remote.h): kWriteIfPossible opens a
// store the user cannot write read-only instead of refusing it.
enum class StoreAccess { kWrite, kWriteIfPossible };

// The store (read-write where it can be: remote.state is written by both
// directions), the remote's URL and default options with a progress meter
// on a terminal labelled `verb` (the command sets its own --jobs and
// --buffer-mib into the options of its direction).
struct TransferSetup {
  std::unique_ptr<Store> store;
  RemoteUrl url;
  TransferOptions opts;
};
Result<TransferSetup> OpenTransfer(const GlobalOptions& g, const TransferArgs& args, const char* verb,
                                   StoreAccess access);

}  // namespace ki::cli
