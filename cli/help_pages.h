// Pages generated from the command line's own definition (the CLI::App
// tree main.cc builds), so that they cannot drift from `--help`: man pages
// (ki(1), ki-CMD(1)), bash and zsh completion scripts, and the candidates
// those scripts ask for (`ki __complete`). Hidden commands run them:
//   ki __manpages DIR       writes DIR/ki.1 and DIR/ki-CMD.1 (the build does)
//   ki __completion bash|zsh [FILE]  prints (writes) the script; the build writes both
//   ki __complete WORD...   prints the candidates for the last WORD
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "command.h"

namespace ki::cli {

// The formatter of every --help page: positionals in capitals (REF, FILE),
// and a usage line that names the whole command (`Usage: ki key export
// [OPTIONS] NAME`). Set on the root before the commands are added.
std::shared_ptr<CLI::FormatterBase> HelpFormatter();

// The --help page of `app` (for the root: the command list, even when a
// subcommand was parsed).
std::string HelpPage(CLI::App& app);

Result<int> WriteManPages(CLI::App& root, const std::string& dir);
// To standard output, or to `file` when it is not empty.
Result<int> PrintCompletionScript(const std::string& shell, const std::string& file);
Result<int> PrintCompletions(CLI::App& root, const std::vector<std::string>& words, const GlobalOptions& g);

}  // namespace ki::cli
