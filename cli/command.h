// The `ki` command's plumbing: global options, command registration, the
// shared helpers every subcommand uses. No store logic lives in cli/: each
// cmd_*.cc parses its options and calls the library.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "ki/status.h"
#include "ki/store.h"

namespace ki::cli {

struct GlobalOptions {
  std::string store;  // --store DIR (else KI_STORE, else the nearest .ki upward)
};

// A command's run step: the process exit code, or an error Status whose
// code decides the exit code (docs/cli.md, "Exit codes").
using RunFn = std::function<Result<int>()>;

// Registers one top-level subcommand. `setup` adds its options to `sub`
// and returns the function to run when it was chosen.
struct CommandSpec {
  const char* name;
  const char* help;
  std::function<RunFn(CLI::App* sub, GlobalOptions* global)> setup;
  int order = 100;  // position in `ki --help`
  // Holds its whole input in memory (a catalog, thousands of files) or
  // walks the whole store: with more than this many command-line arguments
  // the process is re-executed once on mimalloc or a huge-page heap (see
  // UseBigHeap); -1: never.
  int big_heap_min_args = -1;
};
int RegisterCommand(CommandSpec spec);
const std::vector<CommandSpec>& Commands();

#define KI_REGISTER_COMMAND(ident, ...) \
  static const int ki_command_registered_##ident = ::ki::cli::RegisterCommand(__VA_ARGS__)

// Re-executes the process once with mimalloc preloaded, or else glibc's
// malloc tuned for a large heap (transparent huge pages), unless it already
// runs that way;
// returns when it does, or when re-executing is not possible (then the
// command simply runs with the default heap). cli/prefault.cc says why.
void UseBigHeap(char** argv);

// Opens the selected store (see GlobalOptions::store).
Result<std::unique_ptr<Store>> OpenStore(const GlobalOptions& g, OpenMode mode);
// Store options from the environment: KI_LMDB_MAP_SIZE (bytes, or with a K,
// M or G suffix) replaces the 64 GiB index mapping, for tools that cannot
// map that much address space (valgrind: scripts/hot-symbols.sh).
Result<StoreOptions> StoreOptionsFromEnvironment();

// Sections that other modules add to `ki show` of a manifest (rank,
// attestations, evidence level), printed after the built-in page.
using ShowSection = std::function<Status(Store& store, const Digest& d, const Manifest& m, std::ostream& out)>;
int RegisterShowSection(int order, ShowSection fn);
const std::vector<std::pair<int, ShowSection>>& ShowSections();
// Fields that other modules add to `ki show --json` under "ki".
using ShowJsonField = std::function<Status(Store& store, const Digest& d, const Manifest& m, Json& ki)>;
int RegisterShowJsonField(ShowJsonField fn);
const std::vector<ShowJsonField>& ShowJsonFields();

// Presentation helpers shared by commands.
bool StdoutIsTerminal();
std::string FormatNs(double ns);          // "353.0 µs", "12.40 ms", "812.0 ns" (ki/human.h)
std::string Short(const Digest& d);       // "sha256:7e90ce0aebbdc3c5…"
void PrintJson(const Json& j);            // 2-space indent, newline

}  // namespace ki::cli
