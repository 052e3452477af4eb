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
  int jobs = 0;  // set by AddTransferArgs
};

// Adds `remote`, `refs`, --insecure, -j/--jobs (default `jobs`, which its
// help text states after `jobs_help`) and --json to `sub`.
void AddTransferArgs(CLI::App* sub, TransferArgs* args, const char* refs_help, int jobs, const char* jobs_help);

// The store (read-write: remote.state is written by both directions), the
// remote's URL and default options with a progress meter on a terminal
// labelled `verb` (the command sets its own --jobs: push_jobs or pull_jobs).
struct TransferSetup {
  std::unique_ptr<Store> store;
  RemoteUrl url;
  TransferOptions opts;
};
Result<TransferSetup> OpenTransfer(const GlobalOptions& g, const TransferArgs& args, const char* verb);

}  // namespace ki::cli
