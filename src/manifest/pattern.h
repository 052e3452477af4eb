// A JSON Schema `pattern` (an ECMAScript regular expression), compiled to a
// byte-level NFA and matched by simulating every NFA state at once
// (Thompson's construction, as RE2 and Go's regexp do).
//
// Why not std::regex: libstdc++'s matcher backtracks recursively, one stack
// frame per character a quantifier consumes, so a date-time of 100,000
// fraction digits ran the stack out (SIGSEGV). Here matching takes
// O(length x states) time, a fixed amount of memory per pattern and no
// recursion at all, whatever the subject string holds; patterns whose DFA
// is small (all of the schemas') run on the DFA, built when the pattern is
// compiled, one table lookup per byte. Subjects are UTF-8.
//
// Supported syntax (what schemas/ uses, and the common rest): literals
// (UTF-8 included), escapes \d \D \w \W \s and escaped punctuation, '.',
// classes [..] and [^..] of ASCII members and ranges, groups ( ) and (?: ),
// alternation, ^ and $ (whole subject; no multiline), quantifiers * + ? {n}
// {n,} {n,m} and their lazy forms (the same answer for a yes/no match).
// Anything else (backreferences, lookaround, \b, \S, non-ASCII class
// members) fails to compile, so a schema cannot silently mean something
// other than ECMAScript says. '.' and negated sets match one code point;
// ECMAScript counts UTF-16 units, which differs only for '.' against
// characters beyond the BMP.
//
// Thread-safety: immutable after Compile; Matches may run concurrently.
#pragma once

#include <bitset>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ki/status.h"

namespace ki::schema {

class Pattern {
 public:
  static Result<std::unique_ptr<Pattern>> Compile(std::string_view source);

  // ECMAScript RegExp.prototype.test semantics: a match anywhere unless the
  // pattern anchors itself.
  bool Matches(std::string_view subject) const;
  const std::string& source() const { return source_; }
  size_t program_size() const { return prog_.size(); }
  // For tests: whether the DFA was built, and the answer without it.
  bool has_dfa() const { return has_dfa_; }
  bool MatchesWithoutDfa(std::string_view subject) const { return MatchesNfa(subject); }

  struct Inst {
    enum Op : uint8_t { kByte, kSplit, kJump, kBegin, kEnd, kMatch } op;
    uint32_t x = 0, y = 0;  // kSplit: both targets; kJump: x; kByte: set index
  };

 private:
  Pattern() = default;
  // The NFA simulated directly: any pattern, any subject.
  bool MatchesNfa(std::string_view subject) const;
  // Builds the DFA (subset construction, bytes folded into classes) when it
  // stays under a state cap; the schemas' patterns have a few to a few
  // hundred states. Matching is then one table lookup per byte.
  void BuildDfa();
  // The NFA states (kByte and pending kEnd) reachable from `seeds` without
  // consuming a byte; *accept when kMatch is among them.
  std::vector<uint32_t> Closure(const std::vector<uint32_t>& seeds, bool at_begin, bool at_end,
                                bool* accept) const;

  std::string source_;
  std::vector<Inst> prog_;
  std::vector<std::bitset<256>> sets_;
  bool anchored_ = false;  // every path starts with kBegin: try position 0 only
  // The DFA, when built: dfa_[state * classes_ + class_of_[byte]], -1 dead.
  bool has_dfa_ = false;
  int classes_ = 0;
  uint8_t class_of_[256] = {};
  int32_t dfa_start_ = -1;
  std::vector<int32_t> dfa_;
  std::vector<uint8_t> dfa_accept_, dfa_end_accept_;
  friend class PatternCompiler;
};

}  // namespace ki::schema
