// Usage errors in ki's voice. CLI11 reports a bad command line in its own
// words ("A subcommand is required", "ref is required", "--predicate:
// approved not in {...}"); main.cc catches them and prints them through
// here as every other error is printed: `ki: error: <what>`, with a pointer
// to the command's --help. Pure string functions, tested in tests/cli.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ki::cli {

// CLI11's message for a parse error, rephrased: "ref is required" is
// "missing argument REF", "--key is required" "missing option --key",
// "The following argument was not expected: x" "unexpected argument 'x'",
// "--p: a not in {x,y}" "--p: 'a' is not one of x, y". Anything else keeps
// its words, its first letter lowered.
std::string RephraseParseError(std::string_view message);

// The names in `names` closest to `word`: an edit distance of at most 2
// (1 for words of up to 4 letters), or `word` as a prefix; best first.
std::vector<std::string> Nearest(std::string_view word, const std::vector<std::string>& names);

// "ki: error: 'shwo' is not a ki command; did you mean show?" and the like,
// for `ki help` too.
std::string UnknownCommandMessage(std::string_view word, std::string_view where,
                                  const std::vector<std::string>& names);

}  // namespace ki::cli
